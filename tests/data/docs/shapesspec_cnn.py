from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec
B = ShapeVar("B", min=1, max=8)
H = ShapeVar("H", min=96, max=1024)
W = ShapeVar("W", min=96, max=1024)
dynamic_shapes = ShapesSpec({"x": TensorSpec([B, 3, H, W])})
