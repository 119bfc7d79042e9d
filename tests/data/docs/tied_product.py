_r = Dim('_r', min=2, max=64)
h = 16*_r
w = 16*_r + 1
dynamic_shapes = {"x": {2: h, 3: w}}
