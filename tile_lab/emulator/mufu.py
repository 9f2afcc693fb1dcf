"""The GPU's hardware approximations (MUFU.RCP, MUFU.RSQ, MUFU.EX2) bit for bit, in NumPy.

``rcp.approx``, ``rsqrt.approx`` and ``ex2.approx`` run on the SM's special function unit,
which evaluates a quadratic per slice of the significand from a lookup table:
``(A << s0) + B * r + C * r2``, with r the significand's low bits and r2 a truncated square of
r, then shifted down to 24 bits. The structure (slices, shifts, the truncated square, the
rounding constants, the fixed-point input of ex2) is the one Marcin Kościelnicki described for
NVIDIA's Tesla-generation SFU in envytools (``nvhw/sfu.c``); the coefficient tables below were
fitted here to an H100's outputs (cuda-tile 1.7.0, tileiras 13.4.92, 2026-12-05: 425k rsqrt,
279k reciprocal and 465k ex2 inputs), each slice's three integers being the only ones
consistent with every measured output (fitting from half of the inputs gives the same
tables, so the other half is predicted, not memorised). Over those inputs the functions here
reproduce the GPU's bits exactly; ``bench/device_math_check.py`` checks unseen ones. ex2
truncates its input to 7.23 fixed point first (where Tesla's separate RRO step rounded).

All functions take and return float32 values held in float64 arrays (``device_math``'s
convention) and flush subnormal inputs and outputs to zero, as the ``.ftz`` forms do.
MUFU.SQRT and MUFU.TANH (``sqrt.approx``, ``tanh.approx``) are not modelled here.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["ex2", "rcp", "rsqrt"]


def _table(text: str) -> np.ndarray:
    rows = text.split()
    return np.array([[int(rows[i], 16), int(rows[i + 1]), int(rows[i + 2])]
                     for i in range(0, len(rows), 3)], np.int64)


# 1/m for m in [1, 2): 128 slices, by the top 7 fraction bits
_RCP = _table("""
    3fffffe -65534 +1013   3f80fe0 -64522  +989   3f03f04 -63533  +966   3e88cb3 -62567  +945
    3e0f83c -61622  +923   3d980f6 -60699  +902   3d22636 -59797  +883   3cae758 -58914  +863
    3c3c3c2 -58051  +845   3bcbadc -57207  +827   3b5cc0f -56381  +809   3aef6c9 -55572  +791
    3a83a83 -54781  +774   3a196b2 -54007  +758   39b0ad1 -53249  +742   3949660 -52507  +727
    38e38e3 -51780  +711   387f1e0 -51068  +696   381c0e0 -50371  +682   37ba570 -49688  +669
    3759f21 -49019  +656   36fad87 -48363  +642   369d035 -47721  +631   36406c8 -47091  +618
    35e50d7 -46473  +605   358ae04 -45868  +594   3531dec -45274  +582   34da034 -44692  +572
    3483484 -44121  +561   342da7f -43560  +549   33d91d3 -43011  +540   3385a29 -42471  +529
    3333333 -41942  +519   32e1c9f -41423  +510   329161e -40913  +501   3241f69 -40412  +490
    31f3831 -39921  +482   31a6032 -39439  +474   3159722 -38965  +465   310dcbf -38500  +457
    30c30c3 -38043  +449   30792ef -37594  +441   3030303 -37153  +433   2fe80c0 -36720  +426
    2fa0be8 -36294  +418   2f5a441 -35876  +412   2f14990 -35464  +403   2ecfb9c -35060  +397
    2e8ba2f -34663  +390   2e4850f -34272  +383   2e05c0a -33888  +377   2dc3eee -33511  +371
    2d82d83 -33140  +366   2d4279a -32774  +358   2d02d02 -32415  +353   2cc3d8c -32062  +348
    2c8590b -31714  +341   2c47f50 -31373  +337   2c0b02c -31036  +331   2bceb76 -30705  +326
    2b93105 -30379  +320   2b580ae -30059  +316   2b1da47 -29743  +310   2ae3da7 -29432  +305
    2aaaaaa -29127  +302   2a7212a -28826  +297   2a3a0fe -28529  +291   2a02a02 -28237  +287
    29cbc15 -27950  +283   2995710 -27667  +279   295fad4 -27388  +274   292a73d -27114  +271
    28f5c29 -26843  +266   28c1979 -26577  +263   288df0c -26314  +258   285acc4 -26056  +256
    2828283 -25801  +251   27f6028 -25550  +248   27c4598 -25302  +243   27932b4 -25058  +240
    2762762 -24818  +237   2732386 -24581  +233   2702703 -24348  +231   26d31bf -24117  +226
    26a439f -23890  +223   2675c8b -23667  +222   2647c69 -23446  +218   261a320 -23228  +214
    25ed098 -23014  +212   25c04b9 -22802  +208   2593f69 -22593  +205   2568096 -22388  +204
    253c825 -22184  +199   2511602 -21984  +197   24e6a17 -21787  +196   24bc44e -21592  +193
    2492492 -21399  +189   2468acf -21209  +186   243f6f1 -21022  +184   24168e1 -20837  +182
    23ee090 -20655  +180   23c5de7 -20475  +178   239e0d5 -20297  +175   2376948 -20122  +173
    234f72c -19949  +171   2328a6f -19778  +169   2302302 -19609  +166   22dc0d1 -19443  +165
    22b63cc -19278  +161   2290be2 -19116  +160   226b902 -18956  +159   2246b1d -18797  +155
    2222222 -18641  +154   21fde02 -18487  +153   21d9ead -18334  +150   21b6416 -18184  +149
    2192e2a -18035  +147   216fcdd -17888  +145   214d022 -17743  +143   212a7e6 -17600  +143
    2108421 -17458  +140   20e64c2 -17318  +138   20c49bb -17180  +137   20a32ff -17043  +135
    2082082 -16908  +133   2061237 -16775  +132   204080f -16643  +131   2020201 -16513  +130
""")

# 1/sqrt(m) for m in [1, 4): 64 slices of [1, 2), then 64 of [2, 4)
_RSQ = _table("""
    3fffffd -65531  +754   3f817ad -64024  +725   3f05d8f -62575  +698   3e8cfe3 -61179  +672
    3e16d08 -59835  +648   3da336d -58539  +625   3d32199 -57289  +603   3cc3625 -56083  +582
    3c56fbb -54919  +562   3becd12 -53794  +543   3b84cf4 -52708  +526   3b1ee3f -51657  +508
    3abafd2 -50641  +492   3a590a6 -49658  +476   39f8fb3 -48706  +461   399ac08 -47784  +446
    393e4b6 -46891  +433   38e38e3 -46026  +420   388a7b0 -45186  +407   3833055 -44372  +395
    37dd20a -43582  +383   3788c11 -42815  +372   3735db5 -42071  +362   36e4649 -41348  +352
    3694525 -40645  +342   36459ab -39962  +332   35f833b -39298  +323   35ac144 -38652  +314
    3561336 -38023  +305   3517888 -37412  +298   34cf0b4 -36816  +290   3487b40 -36237  +283
    34417ae -35672  +275   33fc587 -35122  +268   33b8456 -34586  +262   33753b4 -34063  +255
    3333333 -33553  +248   32f226c -33056  +242   32b20fe -32571  +236   3272e85 -32098  +231
    3234aac -31636  +225   31f7512 -31185  +220   31bad67 -30745  +215   317f355 -30315  +210
    314468b -29895  +205   310a6ba -29485  +201   30d139a -29084  +196   3098cdc -28691  +191
    306123e -28308  +187   302a377 -27933  +183   2ff4047 -27566  +179   2fbe86e -27208  +176
    2f89bad -26857  +172   2f559c5 -26513  +168   2f2227d -26177  +165   2eef59a -25848  +162
    2ebd2e8 -25525  +158   2e8ba2f -25209  +154   2e5ab3a -24900  +151   2e2a5d5 -24597  +148
    2dfa9d0 -24300  +145   2dcb6f8 -24009  +143   2d9cd26 -23724  +140   2d6ec25 -23444  +137
    2d413c9 -46337  +533   2ce7c62 -45272  +513   2c905a6 -44247  +493   2c3ae55 -43260  +475
    2be754a -42310  +459   2b9596c -41393  +442   2b459b1 -40510  +427   2af7514 -39657  +412
    2aaaaaa -38834  +398   2a5f987 -38038  +384   2a160d5 -37270  +371   29cdfbd -36527  +359
    298757d -35809  +348   2942152 -35113  +336   28fe287 -34440  +326   28bb875 -33789  +316
    287a26b -33157  +306   2839fd1 -32545  +297   27fb010 -31952  +288   27bd291 -31376  +279
    27806c9 -30817  +271   2744c37 -30275  +263   270a257 -29749  +256   26d08af -29237  +248
    2697ec7 -28740  +241   266042e -28257  +235   2629879 -27788  +229   25f3b40 -27331  +222
    25bec17 -26887  +217   258aaa6 -26454  +210   2557687 -26033  +205   2524f67 -25623  +199
    24f34e7 -25224  +195   24c26bc -24835  +190   2492493 -24456  +185   2462e1a -24086  +180
    243430a -23726  +176   2406319 -23374  +171   23d8e02 -23031  +167   23ac382 -22697  +163
    2380354 -22370  +159   2354d3d -22051  +155   232a0fd -21740  +152   22ffe5d -21436  +148
    22d651e -21139  +145   22ad50e -20849  +142   2284df7 -20565  +138   225cf9f -20288  +136
    22359db -20017  +133   220ec79 -19752  +130   21e874a -19492  +126   21c2a1d -19239  +124
    219d4c6 -18991  +122   217871f -18748  +119   21540f6 -18510  +117   213022c -18277  +114
    210ca93 -18049  +112   20e9a08 -17826  +110   20c7067 -17607  +107   20a4d88 -17393  +105
    208314a -17183  +103   2061b89 -16977  +101   2040c27 -16775   +99   2020307 -16578   +97
""")

# 2**f for f in [0, 1): 64 slices, by the top 6 fraction bits
_EX2 = _table("""
    2000000 +22713  +494   2059347 +22960  +501   20b361b +23210  +506   210e8a2 +23463  +511
    216ab0f +23718  +518   21c7d86 +23977  +521   2226039 +24238  +527   2285356 +24502  +532
    22e5709 +24768  +541   2346b7e +25038  +546   23a90e5 +25311  +551   240c772 +25586  +559
    2470f4e +25865  +564   24d68ad +26147  +568   253d3c0 +26431  +577   25a50b6 +26719  +583
    260dfc2 +27010  +589   2678117 +27304  +596   26e34e6 +27602  +600   274fb67 +27902  +609
    27bd4c9 +28206  +615   282c145 +28513  +622   289c10b +28824  +627   290d456 +29138  +633
    297fb5a +29455  +641   29f364e +29776  +647   2a6856a +30100  +655   2ade8e7 +30428  +661
    2b560fb +30759  +670   2bcede2 +31094  +677   2c48fd7 +31432  +686   2cc4710 +31775  +691
    2d413cc +32121  +699   2dbf648 +32471  +705   2e3eebe +32824  +715   2ebfd6a +33182  +721
    2f4228e +33543  +730   2fc5e67 +33908  +739   304b134 +34277  +748   30d1b33 +34651  +753
    3159ca8 +35028  +763   31e35d3 +35409  +773   326e6f7 +35795  +779   32fb054 +36185  +787
    3389230 +36579  +796   3418ccf +36977  +806   34aa076 +37380  +813   353cd6a +37787  +822
    35d13f4 +38198  +833   3667457 +38614  +842   36feede +39035  +849   37983d3 +39460  +858
    383337d +39889  +870   38cfe27 +40324  +877   396e41c +40763  +887   3a0e5aa +41207  +896
    3ab031d +41655  +909   3b53cc1 +42109  +917   3bf92e7 +42568  +925   3ca05dd +43031  +938
    3d495f5 +43500  +946   3df437f +43973  +959   3ea0ecc +44452  +969   3f4f831 +44936  +980
""")


_FRACTION = np.int64(0x7FFFFF)
_ONE = np.int64(1 << 23)
_NAN = np.int64(0x7FFFFFFF)


def _truncated_square_of(r: np.ndarray) -> np.ndarray:
    """The SFU's square of a 17-bit r: partial products r >> (18 - i) for each set bit i,
    summed and halved (about r * r / 2**19, low bits dropped). (Bit 0's is r >> 18 = 0.)"""
    r32 = r.astype(np.int32)  # the sum stays below 2**22
    total = np.zeros_like(r32)
    for i in range(1, 17):
        total += ((r32 >> i) & 1) * (r32 >> (18 - i))
    return total.astype(np.int64) >> 1


@functools.cache
def _square_table() -> np.ndarray:
    """:func:`_truncated_square_of` of every 17-bit r (1 MiB, made on first use in ~10 ms):
    one lookup instead of 64 passes over the data, which made the square most of a
    transcendental's cost on small tiles."""
    return _truncated_square_of(np.arange(1 << 17, dtype=np.int64))


def _truncated_square(r: np.ndarray) -> np.ndarray:
    """The SFU's truncated square of a 17-bit r (0 <= r < 2**17), from the table."""
    return _square_table()[r]


def _bits(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float32).view(np.uint32).astype(np.int64)


def _value(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def _pack(sign: np.ndarray, expo: np.ndarray, fraction: np.ndarray) -> np.ndarray:
    """Bits from a 24-bit significand that may have carried to 2**24; exponents <= 0
    (subnormal or smaller) flush to a signed zero."""
    carry = fraction >= 2 * _ONE
    expo = expo + carry
    fraction = np.where(carry, 0, fraction - _ONE)
    return (sign << 31) | np.where(expo <= 0, 0, (expo << 23) | fraction)


def rcp(t: np.ndarray) -> np.ndarray:
    """``rcp.approx.ftz.f32``: MUFU.RCP."""
    b = _bits(t)
    sign, expo, fraction = b >> 31, (b >> 23) & 0xFF, b & _FRACTION
    i, r = fraction >> 16, fraction & 0xFFFF
    q = ((_RCP[i, 0] << 13) + _RCP[i, 1] * r + _RCP[i, 2] * _truncated_square(r << 1)
         + 0x47E7) >> 15
    out = _pack(sign, 253 - expo, q)
    out = np.where(expo == 0, (sign << 31) | 0x7F800000, out)  # 1/0 (and subnormals)
    out = np.where(expo == 0xFF, np.where(fraction == 0, sign << 31, _NAN), out)
    return _value(out)


def rsqrt(t: np.ndarray) -> np.ndarray:
    """``rsqrt.approx.ftz.f32``: MUFU.RSQ."""
    b = _bits(t)
    sign, expo, fraction = b >> 31, (b >> 23) & 0xFF, b & _FRACTION
    unbiased = expo - 127
    fraction = fraction | ((unbiased & 1) << 23)  # odd exponents: the [2, 4) half
    half = unbiased >> 1
    i, r = fraction >> 17, fraction & 0x1FFFF
    q = ((_RSQ[i, 0] << 14) + _RSQ[i, 1] * r + ((_RSQ[i, 2] * _truncated_square(r)) << 2)
         + 0x7FFF) >> 16
    exact = fraction == 0  # a power of 4
    out = _pack(np.zeros_like(sign), 126 - half + exact, np.where(exact, _ONE, q))
    out = np.where(expo == 0xFF, np.where(fraction == 0, 0, _NAN), out)
    out = np.where(sign == 1, _NAN, out)  # negative numbers and -inf
    out = np.where(expo == 0, (sign << 31) | 0x7F800000, out)  # +-0 and subnormals
    return _value(out)


def ex2(t: np.ndarray) -> np.ndarray:
    """``ex2.approx.ftz.f32``: MUFU.EX2 of t truncated to 7.23 fixed point."""
    b = _bits(t)
    sign, expo = b >> 31, (b >> 23) & 0xFF
    significand = (b & _FRACTION) | _ONE
    shift = expo - 127
    fixed = np.where(shift >= 0, significand << np.clip(shift, 0, 6),
                     significand >> np.clip(-shift, 0, 63))
    whole, fraction = fixed >> 23, fixed & _FRACTION
    negative = (sign == 1) & (fraction != 0)  # 2**-(n + f) = 2**-(n + 1) * 2**(1 - f)
    out_expo = np.where(sign == 1, -whole - (fraction != 0), whole) + 127
    fraction = np.where(negative, ~fraction & _FRACTION, fraction)
    i, r = fraction >> 17, fraction & 0x1FFFF
    q = ((_EX2[i, 0] << 13) + _EX2[i, 1] * r + _EX2[i, 2] * _truncated_square(r)
         + 0x77E2) >> 15
    out = _pack(np.zeros_like(sign), out_expo, q)
    out = np.where(expo == 0, 0x3F800000, out)  # 2**0 (and subnormals)
    too_big = (expo == 0xFF) | (shift >= 7)
    nan = (expo == 0xFF) & ((b & _FRACTION) != 0)
    out = np.where(too_big, np.where(sign == 1, 0, 0x7F800000), out)
    return _value(np.where(nan, _NAN, out))
