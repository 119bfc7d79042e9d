//! The shape rules against PyTorch's formulas, and malformed arguments as errors.

use super::args::broadcast;
use super::window::window;
use super::*;
use dimguard_solver::q;
use dimguard_solver::Expr;
use std::collections::BTreeMap;

fn int(n: i128) -> Expr {
    Expr::int(n)
}

#[test]
fn window_matches_pytorch_formula() {
    let x = Expr::sym("h");
    let e = window(&x, 3, 2, 1, 1, false);
    for h in 2..100 {
        let v = e.eval(&|_| Some(h)).unwrap();
        assert_eq!(v, dimguard_solver::expr::Value::Num(q((h + 2 - 3) / 2 + 1)));
    }
    // ceil_mode: ResNet-style max pool 3/2/1 with ceil.
    let e = window(&x, 3, 2, 0, 1, true);
    for h in 3..50i128 {
        let mut out = (h - 3 + 1).div_euclid(2) + 1;
        if (out - 1) * 2 >= h {
            out -= 1;
        }
        assert_eq!(
            e.eval(&|_| Some(h)).unwrap(),
            dimguard_solver::expr::Value::Num(q(out)),
            "h={h}"
        );
    }
}

#[test]
fn a_zero_stride_is_an_error_not_a_size() {
    // Constant input: folding used to turn the division by zero into the size 1.
    let e = window(&Expr::int(32), 3, 0, 1, 1, false);
    assert!(e.eval(&|_| None).is_err(), "{e}");
    let e = window(&Expr::int(32), 3, 2, 1, 1, false);
    assert_eq!(
        e.eval(&|_| None).unwrap(),
        dimguard_solver::expr::Value::Num(q(16))
    );
}

fn node(
    target: &str,
    inputs: serde_json::Value,
    outputs: serde_json::Value,
) -> crate::program::Node {
    serde_json::from_value(
        serde_json::json!({"target": target, "inputs": inputs, "outputs": outputs}),
    )
    .unwrap()
}

fn run(
    n: &crate::program::Node,
    tensors: &[(&str, Vec<Expr>)],
    symints: &[(&str, Expr)],
) -> Inferred {
    let t: BTreeMap<String, Vec<Expr>> = tensors
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let s: BTreeMap<String, Expr> = symints
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    infer(
        n,
        &Env {
            tensors: &t,
            symints: &s,
        },
    )
    .expect("well-formed arguments")
    .expect("a shape function")
}

fn at(e: &Expr, h: i128) -> i128 {
    match e.eval(&|_| Some(h)).unwrap() {
        dimguard_solver::expr::Value::Num(q) => *q.numer(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn operators_outside_the_fixtures() {
    let h = Expr::sym("h");
    let x = vec![int(2), int(3), h.clone(), int(8)];
    let t = |n: &str| serde_json::json!({"as_tensor": {"name": n}});
    // stack, permute, transpose
    let n = node(
        "torch.ops.aten.stack.default",
        serde_json::json!([{"name": "tensors", "arg": {"as_tensors": [{"name": "x"}, {"name": "x"}]}}, {"name": "dim", "arg": {"as_int": 1}}]),
        serde_json::json!([t("o")]),
    );
    assert_eq!(
        run(&n, &[("x", x.clone())], &[]).tensors[0]
            .as_ref()
            .unwrap()[1],
        int(2)
    );
    let n = node(
        "torch.ops.aten.permute.default",
        serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "dims", "arg": {"as_ints": [0, 2, 3, 1]}}]),
        serde_json::json!([t("o")]),
    );
    assert_eq!(
        run(&n, &[("x", x.clone())], &[]).tensors[0]
            .as_ref()
            .unwrap(),
        &vec![int(2), h.clone(), int(8), int(3)]
    );
    let n = node(
        "torch.ops.aten.transpose.int",
        serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "dim0", "arg": {"as_int": -1}}, {"name": "dim1", "arg": {"as_int": 2}}]),
        serde_json::json!([t("o")]),
    );
    assert_eq!(
        run(&n, &[("x", x.clone())], &[]).tensors[0]
            .as_ref()
            .unwrap()[2],
        int(8)
    );
    // grid_sampler: output spatial size from the grid
    let n = node(
        "torch.ops.aten.grid_sampler.default",
        serde_json::json!([{"name": "input", "arg": t("x")}, {"name": "grid", "arg": t("g")}]),
        serde_json::json!([t("o")]),
    );
    let g = vec![int(2), h.clone(), int(5), int(2)];
    assert_eq!(
        run(&n, &[("x", x.clone()), ("g", g)], &[]).tensors[0]
            .as_ref()
            .unwrap(),
        &vec![int(2), int(3), h.clone(), int(5)]
    );
    // arange(h) and arange(1, h, 3)
    let n = node(
        "torch.ops.aten.arange.start_step",
        serde_json::json!([{"name": "start", "arg": {"as_int": 1}}, {"name": "end", "arg": {"as_sym_int": {"as_name": "s"}}}, {"name": "step", "arg": {"as_int": 3}}]),
        serde_json::json!([t("o")]),
    );
    let len = run(&n, &[], &[("s", h.clone())]).tensors[0]
        .as_ref()
        .unwrap()[0]
        .clone();
    for v in 1..40 {
        assert_eq!(
            at(&len, v),
            (1..v).step_by(3).count() as i128,
            "arange(1, {v}, 3)"
        );
    }
    // sym_size and _operator arithmetic
    let n = node(
        "torch.ops.aten.sym_size.int",
        serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "dim", "arg": {"as_int": 2}}]),
        serde_json::json!([{"as_sym_int": {"as_name": "s2"}}]),
    );
    assert_eq!(
        run(&n, &[("x", x.clone())], &[]).symints,
        vec![("s2".to_string(), h.clone())]
    );
    let n = node(
        "_operator.floordiv",
        serde_json::json!([{"name": "a", "arg": {"as_sym_int": {"as_name": "s2"}}}, {"name": "b", "arg": {"as_int": 4}}]),
        serde_json::json!([{"as_sym_int": {"as_name": "q"}}]),
    );
    let q = run(&n, &[], &[("s2", h.clone())]).symints[0].1.clone();
    assert_eq!(at(&q, 23), 5);
    // slice with a negative start, chunk into 3
    let n = node(
        "torch.ops.aten.slice.Tensor",
        serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "dim", "arg": {"as_int": 2}}, {"name": "start", "arg": {"as_int": -5}}, {"name": "end", "arg": {"as_int": 9223372036854775807i64}}]),
        serde_json::json!([t("o")]),
    );
    let len = run(&n, &[("x", x.clone())], &[]).tensors[0]
        .as_ref()
        .unwrap()[2]
        .clone();
    for v in 0..20 {
        assert_eq!(at(&len, v), v.min(5), "x[-5:] of {v}");
    }
    let n = node(
        "torch.ops.aten.chunk.default",
        serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "chunks", "arg": {"as_int": 3}}, {"name": "dim", "arg": {"as_int": 2}}]),
        serde_json::json!([{"as_tensors": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}]),
    );
    let parts = run(&n, &[("x", x)], &[]).listed;
    assert_eq!(at(&parts[0][2], 10), 4);
    assert_eq!(at(&parts[2][2], 10), 2);
}

#[test]
fn cat_skips_one_dimensional_empty_tensors_as_torch_does() {
    // GPT-2's default cache: cat((0,), [b, heads, s, d], dim=-2), in either order.
    let kv = vec![Expr::sym("b"), int(2), Expr::sym("s"), int(16)];
    for names in [["e", "k"], ["k", "e"]] {
        let n = node(
            "torch.ops.aten.cat.default",
            serde_json::json!([{"name": "tensors", "arg": {"as_tensors": [{"name": names[0]}, {"name": names[1]}]}}, {"name": "dim", "arg": {"as_int": -2}}]),
            serde_json::json!([tensor("o")]),
        );
        let out = run(&n, &[("e", vec![int(0)]), ("k", kv.clone())], &[]);
        assert_eq!(out.tensors[0].as_ref().unwrap(), &kv, "{names:?}");
        assert!(out.guards.is_empty(), "{:?}", out.guards);
    }
    // Only empty tensors: the empty tensor.
    let n = node(
        "torch.ops.aten.cat.default",
        serde_json::json!([{"name": "tensors", "arg": {"as_tensors": [{"name": "e"}, {"name": "f"}]}}]),
        serde_json::json!([tensor("o")]),
    );
    let out = run(&n, &[("e", vec![int(0)]), ("f", vec![int(0)])], &[]);
    assert_eq!(out.tensors[0].as_ref().unwrap(), &vec![int(0)]);
    // A 1-D tensor that is not empty is not skipped: a rank mismatch stays an error.
    let n = node(
        "torch.ops.aten.cat.default",
        serde_json::json!([{"name": "tensors", "arg": {"as_tensors": [{"name": "k"}, {"name": "f"}]}}, {"name": "dim", "arg": {"as_int": -2}}]),
        serde_json::json!([tensor("o")]),
    );
    let e = error(&n, &[("k", kv), ("f", vec![int(3)])]);
    assert!(e.to_string().contains("cat"), "{e}");
}

#[test]
fn broadcasting() {
    let mut g = vec![];
    let s = broadcast(
        &[Expr::sym("a"), int(1), int(10)],
        &[Expr::sym("b"), int(10)],
        &mut g,
    );
    assert_eq!(s, vec![Expr::sym("a"), Expr::sym("b"), int(10)]);
    assert!(g.is_empty());
    let s = broadcast(&[Expr::sym("a")], &[Expr::sym("b")], &mut g);
    assert_eq!(s, vec![Expr::sym("a")]);
    assert_eq!(g.len(), 1);
}

fn tensor(n: &str) -> serde_json::Value {
    serde_json::json!({"as_tensor": {"name": n}})
}

fn error(n: &crate::program::Node, tensors: &[(&str, Vec<Expr>)]) -> ShapeError {
    let t: BTreeMap<String, Vec<Expr>> = tensors
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let s = BTreeMap::new();
    infer(
        n,
        &Env {
            tensors: &t,
            symints: &s,
        },
    )
    .expect_err("malformed arguments are an error")
}

/// Found by fuzzing: a rank-2 convolution weight used to index out of bounds (a panic).
#[test]
fn conv_with_a_rank_2_weight_is_an_error_naming_the_node() {
    let mut n = node(
        "torch.ops.aten.conv2d.default",
        serde_json::json!([{"name": "input", "arg": tensor("x")}, {"name": "weight", "arg": tensor("w")}]),
        serde_json::json!([tensor("o")]),
    );
    n.name = Some("conv2d_7".into());
    let x = vec![int(1), int(3), Expr::sym("h"), Expr::sym("w")];
    let e = error(&n, &[("x", x), ("w", vec![int(8), int(3)])]);
    assert_eq!(e.node, "conv2d_7");
    assert_eq!(
        e.to_string(),
        "node `conv2d_7` (torch.ops.aten.conv2d.default): `weight` has 2 dimension(s), but conv2d needs at least 4"
    );
}

/// Found by fuzzing: a rank-0 `linear` weight used to index out of bounds (a panic).
#[test]
fn linear_with_a_rank_0_weight_is_an_error_naming_the_node() {
    let mut n = node(
        "torch.ops.aten.linear.default",
        serde_json::json!([{"name": "input", "arg": tensor("x")}, {"name": "weight", "arg": tensor("w")}]),
        serde_json::json!([tensor("o")]),
    );
    n.name = Some("linear".into());
    let e = error(&n, &[("x", vec![Expr::sym("b"), int(10)]), ("w", vec![])]);
    assert!(
        e.to_string().starts_with(
            "node `linear` (torch.ops.aten.linear.default): `weight` has 0 dimension(s)"
        ),
        "{e}"
    );
    // A rank-0 input as well.
    let e = error(&n, &[("x", vec![]), ("w", vec![int(4), int(10)])]);
    assert!(e.message.contains("`input` has 0 dimension(s)"), "{e}");
}

/// Every other rank or list-length mistake the rules index with is an error too, never a panic.
#[test]
fn short_shapes_and_lists_are_errors() {
    type Case<'a> = (&'a str, serde_json::Value, Vec<(&'a str, Vec<Expr>)>);
    let cases: Vec<Case> = vec![
        (
            "torch.ops.aten.max_pool2d.default",
            serde_json::json!([{"name": "self", "arg": tensor("x")}, {"name": "kernel_size", "arg": {"as_ints": [3, 3]}}]),
            vec![("x", vec![int(4)])],
        ),
        (
            "torch.ops.aten.conv2d.default",
            serde_json::json!([{"name": "input", "arg": tensor("x")}, {"name": "weight", "arg": tensor("w")}, {"name": "bias", "arg": {"as_none": []}}, {"name": "stride", "arg": {"as_ints": [1, 1, 1, 1]}}, {"name": "padding", "arg": {"as_ints": [1, 1]}}]),
            vec![
                ("x", vec![int(1), int(3), int(8), int(8), int(8)]),
                ("w", vec![int(4), int(3), int(3), int(3), int(3)]),
            ],
        ),
        (
            "torch.ops.aten.pixel_shuffle.default",
            serde_json::json!([{"name": "self", "arg": tensor("x")}, {"name": "upscale_factor", "arg": {"as_int": 2}}]),
            vec![("x", vec![int(4), int(4)])],
        ),
        (
            "torch.ops.aten.adaptive_avg_pool2d.default",
            serde_json::json!([{"name": "self", "arg": tensor("x")}, {"name": "output_size", "arg": {"as_ints": [1, 1]}}]),
            vec![("x", vec![int(4)])],
        ),
        (
            "torch.ops.aten.flatten.using_ints",
            serde_json::json!([{"name": "input", "arg": tensor("x")}, {"name": "start_dim", "arg": {"as_int": 2}}, {"name": "end_dim", "arg": {"as_int": 1}}]),
            vec![("x", vec![int(2), int(3), int(4)])],
        ),
        (
            "torch.ops.aten.cat.default",
            serde_json::json!([{"name": "tensors", "arg": {"as_tensors": [{"name": "a"}, {"name": "b"}]}}, {"name": "dim", "arg": {"as_int": 1}}]),
            vec![("a", vec![int(2), int(3)]), ("b", vec![int(2)])],
        ),
        (
            "torch.ops.aten.repeat.default",
            serde_json::json!([{"name": "self", "arg": tensor("x")}, {"name": "repeats", "arg": {"as_ints": [2]}}]),
            vec![("x", vec![int(2), int(3)])],
        ),
        (
            "torch.ops.aten.expand.default",
            serde_json::json!([{"name": "self", "arg": tensor("x")}, {"name": "size", "arg": {"as_ints": [-1, 4, 3]}}]),
            vec![("x", vec![int(3)])],
        ),
        (
            "torch.ops.aten.grid_sampler.default",
            serde_json::json!([{"name": "input", "arg": tensor("x")}, {"name": "grid", "arg": tensor("g")}]),
            vec![
                ("x", vec![int(1), int(3), int(8), int(8)]),
                ("g", vec![int(1)]),
            ],
        ),
    ];
    for (target, inputs, tensors) in cases {
        let n = node(target, inputs, serde_json::json!([tensor("o")]));
        let e = error(&n, &tensors);
        assert!(e.to_string().contains(target), "{e}");
    }
}

/// Padding, `F.unfold` (`im2col`) and `F.fold` (`col2im`), as torch 2.15 writes them in the
/// composed programs of tests/data/composed: sizes against a direct count of the windows.
#[test]
fn padding_unfold_and_fold() {
    let h = Expr::sym("h");
    let t = |n: &str| serde_json::json!({"as_tensor": {"name": n}});
    let x = vec![int(2), int(3), h.clone(), int(10)];
    // F.pad(x, (3, 3, 1, -2), mode="reflect"): W + 6, H - 1
    let n = node(
        "torch.ops.aten.pad.default",
        serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "pad", "arg": {"as_ints": [3, 3, 1, -2]}}, {"name": "mode", "arg": {"as_string": "reflect"}}]),
        serde_json::json!([t("o")]),
    );
    let s = run(&n, &[("x", x.clone())], &[]).tensors[0]
        .clone()
        .unwrap();
    assert_eq!((at(&s[2], 20), at(&s[3], 20), at(&s[1], 20)), (19, 16, 3));
    let n = node(
        "torch.ops.aten.constant_pad_nd.default",
        serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "pad", "arg": {"as_ints": [1, 1, 1]}}]),
        serde_json::json!([t("o")]),
    );
    assert!(error(&n, &[("x", x.clone())]).message.contains("pairs"));
    // unfold(kernel 3, dilation 2, padding 1, stride 2) and fold back to (h, 10), kernel 2
    // stride 2
    let windows = |size: i128, k: i128, d: i128, p: i128, s: i128| {
        (0..)
            .take_while(|i| i * s + d * (k - 1) < size + 2 * p)
            .count() as i128
    };
    let n = node(
        "torch.ops.aten.im2col.default",
        serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "kernel_size", "arg": {"as_ints": [3, 3]}}, {"name": "dilation", "arg": {"as_ints": [2, 2]}}, {"name": "padding", "arg": {"as_ints": [1, 1]}}, {"name": "stride", "arg": {"as_ints": [2, 2]}}]),
        serde_json::json!([t("o")]),
    );
    let s = run(&n, &[("x", x.clone())], &[]).tensors[0]
        .clone()
        .unwrap();
    assert_eq!(s.len(), 3);
    for v in 3..60 {
        assert_eq!(at(&s[1], v), 27);
        assert_eq!(
            at(&s[2], v),
            windows(v, 3, 2, 1, 2) * windows(10, 3, 2, 1, 2),
            "h = {v}"
        );
    }
    let n = node(
        "torch.ops.aten.col2im.default",
        serde_json::json!([{"name": "self", "arg": t("c")}, {"name": "output_size", "arg": {"as_sym_ints": [{"as_name": "oh"}, {"as_int": 10}]}}, {"name": "kernel_size", "arg": {"as_ints": [2, 2]}}, {"name": "dilation", "arg": {"as_ints": [1, 1]}}, {"name": "padding", "arg": {"as_ints": [0, 0]}}, {"name": "stride", "arg": {"as_ints": [2, 2]}}]),
        serde_json::json!([t("o")]),
    );
    let c = vec![int(2), int(16), Expr::sym("l")];
    let s = run(&n, &[("c", c)], &[("oh", h.clone())]).tensors[0]
        .clone()
        .unwrap();
    assert_eq!(s, vec![int(2), int(4), h, int(10)]);
}
