a = Dim('a', min=2, max=100)
b = Dim('b', min=2, max=100)
dynamic_shapes = {"x": {0: a}, "y": {0: b}}
