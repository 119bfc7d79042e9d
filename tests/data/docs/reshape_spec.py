n = Dim('n', min=2, max=64)
rows = Dim('rows', min=2, max=512)
cols = Dim('cols', min=2, max=1024)
dynamic_shapes = {"t": {0: n, 1: rows, 2: cols}}
