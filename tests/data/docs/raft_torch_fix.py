_dim_2 = Dim('_dim_2', min=17, max=270)
dim_2 = 8*_dim_2
_dim_3 = Dim('_dim_3', min=9, max=240)
dim_3 = 16*_dim_3
dynamic_shapes = {"image1": {2: dim_2, 3: dim_3}}
