"""Where a batched pass reads and writes (``emulator/batched_memory.py``): every block's tile
in one NumPy operation, inside the array or reaching past its end."""

from __future__ import annotations

import numpy as np

from tile_lab.emulator import batched_memory as memory


def test_tiles_one_after_another_are_a_view_from_the_passes_first_tile():
    data = np.arange(40, dtype=np.float32)
    starts = [np.array([8, 12, 16])]  # a pass starting at block 2 of 4-element tiles
    view = memory.gather(data, starts, (4,), 3)
    assert np.shares_memory(view, data)
    np.testing.assert_array_equal(view, data[8:20].reshape(3, 4))
    assert memory.consecutive_view(data, [np.array([0, 8])], (4,), 2) is None  # a gap


def test_a_ragged_gather_reads_the_fill_past_the_end_and_a_ragged_scatter_drops_it():
    data = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)
    starts = [np.array([0, 0, 4, 4]), np.array([0, 4, 0, 4])]  # 4x4 tiles over 5x7: 4 groups
    tiles = memory.gather_ragged(data, starts, (4, 4), 4, np.float32(-1))
    assert tiles.shape == (4, 4, 4)
    np.testing.assert_array_equal(tiles[0], data[:4, :4])
    np.testing.assert_array_equal(tiles[1][:, :3], data[:4, 4:])
    assert (tiles[1][:, 3] == -1).all() and (tiles[3][1:] == -1).all()
    np.testing.assert_array_equal(tiles[3][0, :3], data[4, 4:])
    out = np.zeros_like(data)
    memory.scatter_ragged(out, starts, (4, 4), tiles + 100, 4)
    np.testing.assert_array_equal(out, data + 100)  # every element once, nothing beyond


def test_two_stores_to_one_tile_are_found_a_partial_tile_at_the_end_included():
    shape, box = (10,), (4,)
    assert not memory.written_twice(shape, box, [[np.array([0, 4, 8])]], 3)
    assert memory.written_twice(shape, box, [[np.array([0, 4, 8])], [np.array([8])]], 3)
