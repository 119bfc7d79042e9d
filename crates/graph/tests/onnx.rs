//! The ONNX reader (`dimguard_graph::onnx`) against an encoder written here from the protobuf
//! wire format: generated models (inputs with fixed, named and unknown axes, initializers listed
//! as inputs, metadata, opsets, unknown fields of every wire type) read back exactly; every
//! truncation, every single-byte change and arbitrary bytes give a result or an error with an
//! offset, never a panic; and `check` of a file without dimguard's report names its symbolic
//! axes and how to add the report.

use dimguard_graph::onnx::{check, is_onnx, read, OnnxDim, OnnxInput, REPORT_KEY};
use proptest::prelude::*;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn bytes_field(n: u32, b: &[u8], out: &mut Vec<u8>) {
    varint(u64::from(n) << 3 | 2, out);
    varint(b.len() as u64, out);
    out.extend_from_slice(b);
}

fn int_field(n: u32, v: u64, out: &mut Vec<u8>) {
    varint(u64::from(n) << 3, out);
    varint(v, out);
}

/// Fields a reader must skip: a fixed64, a fixed32 and a length-delimited field of numbers
/// the reader does not use.
fn noise(out: &mut Vec<u8>) {
    varint(99 << 3 | 1, out);
    out.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    varint(98 << 3 | 5, out);
    out.extend_from_slice(&[9, 9, 9, 9]);
    bytes_field(97, b"skip me", out);
}

/// A generated model: its inputs, initializer names (also listed as inputs), metadata, opset.
#[derive(Debug, Clone)]
struct Model {
    inputs: Vec<OnnxInput>,
    initializers: Vec<String>,
    metadata: Vec<(String, String)>,
    opset: i64,
}

fn value_info(i: &OnnxInput) -> Vec<u8> {
    let mut v = Vec::new();
    bytes_field(1, i.name.as_bytes(), &mut v);
    let mut tensor = Vec::new();
    int_field(1, 1, &mut tensor);
    if let Some(shape) = &i.shape {
        let mut s = Vec::new();
        for d in shape {
            let mut o = Vec::new();
            match d {
                OnnxDim::Value(x) => int_field(1, *x as u64, &mut o),
                OnnxDim::Param(p) => bytes_field(2, p.as_bytes(), &mut o),
                OnnxDim::Unknown => bytes_field(3, b"denotation", &mut o),
            }
            bytes_field(1, &o, &mut s);
        }
        bytes_field(2, &s, &mut tensor);
    }
    let mut ty = Vec::new();
    bytes_field(1, &tensor, &mut ty);
    bytes_field(2, &ty, &mut v);
    noise(&mut v);
    v
}

fn encode(m: &Model) -> Vec<u8> {
    let mut g = Vec::new();
    bytes_field(2, b"main_graph", &mut g);
    noise(&mut g);
    for name in &m.initializers {
        let mut t = Vec::new();
        int_field(2, 1, &mut t);
        bytes_field(8, name.as_bytes(), &mut t);
        bytes_field(5, &t, &mut g);
        let fake = OnnxInput {
            name: name.clone(),
            shape: Some(vec![OnnxDim::Value(4)]),
        };
        bytes_field(11, &value_info(&fake), &mut g);
    }
    for i in &m.inputs {
        bytes_field(11, &value_info(i), &mut g);
    }
    let mut out = Vec::new();
    int_field(1, 10, &mut out);
    bytes_field(2, b"pytorch", &mut out);
    bytes_field(3, b"2.15.0", &mut out);
    let mut op = Vec::new();
    bytes_field(1, b"", &mut op);
    int_field(2, m.opset as u64, &mut op);
    bytes_field(8, &op, &mut out);
    bytes_field(7, &g, &mut out);
    noise(&mut out);
    for (k, v) in &m.metadata {
        let mut e = Vec::new();
        bytes_field(1, k.as_bytes(), &mut e);
        bytes_field(2, v.as_bytes(), &mut e);
        bytes_field(14, &e, &mut out);
    }
    out
}

fn dim() -> impl Strategy<Value = OnnxDim> {
    prop_oneof![
        (0i64..1 << 40).prop_map(OnnxDim::Value),
        "[a-z_][a-z0-9_*+() /-]{0,12}".prop_map(OnnxDim::Param),
        Just(OnnxDim::Unknown),
    ]
}

fn model() -> impl Strategy<Value = Model> {
    (
        prop::collection::vec(
            (
                "[a-z][a-z0-9_]{0,8}",
                prop::option::weighted(0.9, prop::collection::vec(dim(), 0..6)),
            ),
            0..5,
        ),
        prop::collection::vec("w[0-9]{1,3}", 0..3),
        prop::collection::vec(("[a-z.]{1,16}", "\\PC{0,40}"), 0..3),
        7i64..24,
    )
        .prop_map(|(inputs, inits, metadata, opset)| {
            let mut seen = std::collections::HashSet::new();
            let inputs = inputs
                .into_iter()
                .filter(|(n, _)| seen.insert(format!("in_{n}")))
                .map(|(n, shape)| OnnxInput {
                    name: format!("in_{n}"),
                    shape,
                })
                .collect();
            Model {
                inputs,
                initializers: inits,
                metadata,
                opset,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_models_read_back_exactly(m in model()) {
        let bytes = encode(&m);
        let r = read(&bytes).expect("a well-formed model reads");
        prop_assert_eq!(&r.inputs, &m.inputs);
        prop_assert_eq!(&r.metadata, &m.metadata);
        prop_assert_eq!(r.opset(), Some(m.opset));
        prop_assert_eq!(r.ir_version, Some(10));
        prop_assert_eq!(r.producer.as_str(), "pytorch 2.15.0");
        prop_assert!(is_onnx(&bytes, "model.bin"));
    }

    #[test]
    fn truncated_or_changed_files_never_panic(m in model(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let bytes = encode(&m);
        let n = at.index(bytes.len());
        // Cut: a prefix that ends inside a field is an error pointing inside the file.
        if let Err(e) = read(&bytes[..n]) {
            prop_assert!(e.offset <= n, "{}", e);
            prop_assert!(!e.message.is_empty());
        }
        let mut changed = bytes.clone();
        changed[n] = byte;
        let _ = read(&changed);
        let _ = check(&changed, "model.onnx");
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = read(&bytes);
        let _ = is_onnx(&bytes, "x");
        let _ = check(&bytes, "model.onnx");
    }
}

#[test]
fn malformed_files_say_where_and_what() {
    let e = read(&[]).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
    let e = read(&[0x08, 0x80]).unwrap_err();
    assert!(
        e.to_string().contains("at byte 1") && e.to_string().contains("varint"),
        "{e}"
    );
    // graph (field 7) claims 100 bytes, 2 follow.
    let e = read(&[0x08, 0x0a, 0x3a, 100, 0, 0]).unwrap_err();
    assert!(e.to_string().contains("runs past the end"), "{e}");
    // Wire type 3 (a group): not used by ONNX.
    let e = read(&[0x0b]).unwrap_err();
    assert!(e.to_string().contains("wire type 3"), "{e}");
    // A model without a graph.
    let e = read(&[0x08, 0x0a]).unwrap_err();
    assert!(e.to_string().contains("no `graph`"), "{e}");
}

#[test]
fn a_file_without_the_report_names_its_symbolic_axes_and_how_to_add_it() {
    let m = Model {
        inputs: vec![OnnxInput {
            name: "x".into(),
            shape: Some(vec![
                OnnxDim::Param("batch".into()),
                OnnxDim::Value(3),
                OnnxDim::Param("s83".into()),
                OnnxDim::Unknown,
            ]),
        }],
        initializers: vec!["w".into()],
        metadata: vec![],
        opset: 18,
    };
    let e = check(&encode(&m), "model.onnx").unwrap_err().to_string();
    assert!(e.contains("metadata_props has no `dimguard.report`"), "{e}");
    assert!(e.contains("x[0] = batch, x[2] = s83, x[3] = ?"), "{e}");
    assert!(
        e.contains("dimguard.onnx.export(") && e.contains("dimguard.onnx.attach("),
        "{e}"
    );
    let with_bad = Model {
        metadata: vec![(REPORT_KEY.into(), "{not json".into())],
        ..m
    };
    let e = check(&encode(&with_bad), "model.onnx")
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not a report dimguard can read"), "{e}");
}
