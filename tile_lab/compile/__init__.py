"""Source to artifacts: everything between a kernel and what the compiler made of it.

``inspect.py`` is ``tile_lab.inspect`` (check the kernel, arch and hints, build the
signature, run the pipeline, pack an ``Inspection``); ``signature.py`` reads
example arguments or a spec string (its grammar too); ``pipeline.py`` runs the
stages (cuTile's frontend, tileiras) and schedules the texts made for reading:
``tileir.py`` the Tile IR text (tileirdisasm) and ``disassembly.py`` the SASS and PTX
(nvdisasm), through ``toolchain.py`` (which finds and runs the tools and keeps their
outputs on disk); ``errors.py`` turns cuTile's compile errors into the user's words;
``artifacts.py`` holds the results and ``stage_rows.py`` parses each stage's text once
into typed rows.

Nothing is imported here, so reading an ``Inspection`` (renderers, shared files) never loads
the toolchain.
"""
