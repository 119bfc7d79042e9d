//! ONNX files: what `dimguard check model.onnx` reads of one. A hand-written reader of the
//! protobuf wire format, for exactly the fields it needs: the model's `metadata_props` (where
//! `dimguard.onnx.export` stores its report under [`REPORT_KEY`]), its opsets, and the shapes of
//! the graph's inputs (each axis a number, a named `dim_param` or unknown).
//!
//! Every read is bounded by the bytes it is given: a length past the end of its field, a varint
//! of more than ten bytes, a wire type protobuf does not define or a string that is not UTF-8 is
//! an [`OnnxError`] naming the byte offset and the field path (`graph.input[2].type`), never a
//! panic; nesting goes only as deep as the fixed path `ModelProto.graph.input.type.tensor_type.
//! shape.dim`.

use crate::error::Error;
use dimguard_solver::report::{
    CheckReport, Command, OnnxFile, OnnxInputShape, OnnxReport, ShapeEntry, SizeAnswer,
};
use std::fmt;

/// The `metadata_props` key under which `dimguard.onnx.export` stores its report.
pub const REPORT_KEY: &str = "dimguard.report";

/// What the reader found in an ONNX file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OnnxModel {
    /// `ir_version`.
    pub ir_version: Option<u64>,
    /// `opset_import`: `(domain, version)`; the default domain is `""`.
    pub opsets: Vec<(String, i64)>,
    /// `producer_name` and `producer_version`, joined by a space.
    pub producer: String,
    /// `metadata_props`, in file order.
    pub metadata: Vec<(String, String)>,
    /// The graph's inputs that are not initializers (the tensors a caller feeds).
    pub inputs: Vec<OnnxInput>,
}

/// One input of the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnnxInput {
    /// Its name.
    pub name: String,
    /// Its axes; `None` when the file records no shape (any rank), or the input is not a tensor.
    pub shape: Option<Vec<OnnxDim>>,
}

/// One axis of an input's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnnxDim {
    /// A fixed size (`dim_value`).
    Value(i64),
    /// A symbolic size (`dim_param`): axes with the same name must be equal at run time.
    Param(String),
    /// Neither is set: any size.
    Unknown,
}

impl OnnxModel {
    /// The value of a `metadata_props` key (the last one, when a file repeats it).
    pub fn metadata(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The version of the default (`ai.onnx`) opset, when the file imports it.
    pub fn opset(&self) -> Option<i64> {
        self.opsets
            .iter()
            .find(|(d, _)| d.is_empty() || d == "ai.onnx")
            .map(|(_, v)| *v)
    }
}

/// A malformed file: where (byte offset, field path) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnnxError {
    /// Byte offset in the file where the bad field starts.
    pub offset: usize,
    /// The field path (`graph.input[2].type.tensor_type.shape.dim[1]`).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for OnnxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}", self.offset)?;
        if !self.path.is_empty() {
            write!(f, " ({})", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for OnnxError {}

/// Whether `bytes` are an ONNX file rather than a program dimguard reads otherwise (a `.pt2`
/// zip, a program's JSON): `label` ends in `.onnx`, or the bytes start as a `ModelProto` does
/// (field 1, `ir_version`, a varint) and the top level reads as protobuf with a `graph`.
pub fn is_onnx(bytes: &[u8], label: &str) -> bool {
    if bytes.starts_with(b"PK") {
        return false;
    }
    if label.to_ascii_lowercase().ends_with(".onnx") {
        return true;
    }
    bytes.first() == Some(&0x08)
        && Fields::new(bytes, 0)
            .map(|f| f.map(|f| f.number))
            .collect::<Result<Vec<u32>, _>>()
            .is_ok_and(|ns| ns.contains(&7))
}

/// Reads the parts of an ONNX `ModelProto` that `check` needs.
pub fn read(bytes: &[u8]) -> Result<OnnxModel, OnnxError> {
    if bytes.is_empty() {
        return Err(err(0, "", "the file is empty"));
    }
    let mut m = OnnxModel::default();
    let mut producer = (String::new(), String::new());
    let mut graph = None;
    for f in Fields::new(bytes, 0) {
        let f = f?;
        match (f.number, &f.value) {
            (1, Value::Varint(v)) => m.ir_version = Some(*v),
            (2, Value::Bytes(b)) => producer.0 = text(b, f.offset, "producer_name")?,
            (3, Value::Bytes(b)) => producer.1 = text(b, f.offset, "producer_version")?,
            (7, Value::Bytes(b)) => graph = Some((f.offset, *b)),
            (8, Value::Bytes(b)) => m.opsets.push(opset(b, f.offset)?),
            (14, Value::Bytes(b)) => m.metadata.push(entry(b, f.offset)?),
            (1 | 2 | 3 | 7 | 8 | 14, _) => {
                return Err(err(f.offset, model_field(f.number), "wrong wire type"))
            }
            _ => {}
        }
    }
    m.producer = format!("{} {}", producer.0, producer.1).trim().to_string();
    let Some((at, g)) = graph else {
        return Err(err(
            0,
            "",
            "no `graph` field (field 7): not an ONNX ModelProto",
        ));
    };
    m.inputs = inputs(g, at)?;
    Ok(m)
}

/// The name of a `ModelProto` field the reader checks, for messages.
fn model_field(n: u32) -> &'static str {
    match n {
        1 => "ir_version",
        2 => "producer_name",
        3 => "producer_version",
        7 => "graph",
        8 => "opset_import",
        _ => "metadata_props",
    }
}

fn err(offset: usize, path: &str, message: impl Into<String>) -> OnnxError {
    OnnxError {
        offset,
        path: path.into(),
        message: message.into(),
    }
}

fn text(b: &[u8], at: usize, path: &str) -> Result<String, OnnxError> {
    String::from_utf8(b.to_vec()).map_err(|e| {
        err(
            at,
            path,
            format!(
                "not UTF-8 text (byte {} of the string)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn opset(b: &[u8], at: usize) -> Result<(String, i64), OnnxError> {
    let (mut domain, mut version) = (String::new(), 0);
    for f in Fields::new(b, at) {
        let f = f?;
        match (f.number, &f.value) {
            (1, Value::Bytes(s)) => domain = text(s, f.offset, "opset_import.domain")?,
            (2, Value::Varint(v)) => version = *v as i64,
            (1 | 2, _) => return Err(err(f.offset, "opset_import", "wrong wire type")),
            _ => {}
        }
    }
    Ok((domain, version))
}

fn entry(b: &[u8], at: usize) -> Result<(String, String), OnnxError> {
    let (mut key, mut value) = (String::new(), String::new());
    for f in Fields::new(b, at) {
        let f = f?;
        match (f.number, &f.value) {
            (1, Value::Bytes(s)) => key = text(s, f.offset, "metadata_props.key")?,
            (2, Value::Bytes(s)) => value = text(s, f.offset, "metadata_props.value")?,
            (1 | 2, _) => return Err(err(f.offset, "metadata_props", "wrong wire type")),
            _ => {}
        }
    }
    Ok((key, value))
}

/// `GraphProto.input` (field 11) less the names of `initializer` (field 5, `TensorProto.name`
/// is field 8) and `sparse_initializer` (field 15; its `values` tensor, field 1, holds the name).
fn inputs(g: &[u8], at: usize) -> Result<Vec<OnnxInput>, OnnxError> {
    let mut all = Vec::new();
    let mut initializers = std::collections::HashSet::new();
    for f in Fields::new(g, at) {
        let f = f?;
        match (f.number, &f.value) {
            (11, Value::Bytes(b)) => {
                let path = format!("graph.input[{}]", all.len());
                all.push(value_info(b, f.offset, &path)?);
            }
            (5, Value::Bytes(b)) => {
                if let Some(n) = string_field(b, f.offset, 8, "graph.initializer.name")? {
                    initializers.insert(n);
                }
            }
            (15, Value::Bytes(b)) => {
                for v in Fields::new(b, f.offset) {
                    let v = v?;
                    if let (1, Value::Bytes(t)) = (v.number, &v.value) {
                        if let Some(n) =
                            string_field(t, v.offset, 8, "graph.sparse_initializer.values.name")?
                        {
                            initializers.insert(n);
                        }
                    }
                }
            }
            (11 | 5 | 15, _) => return Err(err(f.offset, "graph", "wrong wire type")),
            _ => {}
        }
    }
    all.retain(|i| !initializers.contains(&i.name));
    Ok(all)
}

/// The last string field `number` of a message, when it has one.
fn string_field(b: &[u8], at: usize, number: u32, path: &str) -> Result<Option<String>, OnnxError> {
    let mut out = None;
    for f in Fields::new(b, at) {
        let f = f?;
        if f.number == number {
            match &f.value {
                Value::Bytes(s) => out = Some(text(s, f.offset, path)?),
                _ => return Err(err(f.offset, path, "wrong wire type")),
            }
        }
    }
    Ok(out)
}

/// `ValueInfoProto`: `name` (1), `type` (2: `TypeProto`, whose `tensor_type` (1) has `shape`
/// (2: `TensorShapeProto`, `dim` (1): `dim_value` (1), `dim_param` (2))).
fn value_info(b: &[u8], at: usize, path: &str) -> Result<OnnxInput, OnnxError> {
    let mut name = String::new();
    let mut shape = None;
    for f in Fields::new(b, at) {
        let f = f?;
        match (f.number, &f.value) {
            (1, Value::Bytes(s)) => name = text(s, f.offset, &format!("{path}.name"))?,
            (2, Value::Bytes(t)) => {
                for tt in Fields::new(t, f.offset) {
                    let tt = tt?;
                    if let (1, Value::Bytes(tensor)) = (tt.number, &tt.value) {
                        for s in Fields::new(tensor, tt.offset) {
                            let s = s?;
                            if let (2, Value::Bytes(dims)) = (s.number, &s.value) {
                                let p = format!("{path}.type.tensor_type.shape");
                                shape = Some(dims_of(dims, s.offset, &p)?);
                            }
                        }
                    }
                }
            }
            (1 | 2, _) => return Err(err(f.offset, path, "wrong wire type")),
            _ => {}
        }
    }
    Ok(OnnxInput { name, shape })
}

fn dims_of(b: &[u8], at: usize, path: &str) -> Result<Vec<OnnxDim>, OnnxError> {
    let mut out = Vec::new();
    for f in Fields::new(b, at) {
        let f = f?;
        let Value::Bytes(d) = f.value else {
            if f.number == 1 {
                return Err(err(f.offset, path, "wrong wire type for `dim`"));
            }
            continue;
        };
        if f.number != 1 {
            continue;
        }
        let p = format!("{path}.dim[{}]", out.len());
        let mut dim = OnnxDim::Unknown;
        for x in Fields::new(d, f.offset) {
            let x = x?;
            match (x.number, &x.value) {
                (1, Value::Varint(v)) => dim = OnnxDim::Value(*v as i64),
                (2, Value::Bytes(s)) => dim = OnnxDim::Param(text(s, x.offset, &p)?),
                (1 | 2, _) => return Err(err(x.offset, &p, "wrong wire type")),
                _ => {}
            }
        }
        out.push(dim);
    }
    Ok(out)
}

/// One field's value, by wire type.
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32,
}

/// One field of a message: its number, value and the byte offset of its key in the file.
struct Field<'a> {
    number: u32,
    value: Value<'a>,
    offset: usize,
}

/// The fields of one message, in order; `base` is the message's offset in the file (for errors).
/// After an error it yields nothing more.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
    base: usize,
    failed: bool,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8], base: usize) -> Self {
        Fields {
            bytes,
            at: 0,
            base,
            failed: false,
        }
    }

    fn varint(&mut self) -> Result<u64, OnnxError> {
        let start = self.at;
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.bytes.get(self.at) else {
                return Err(err(
                    self.base + start,
                    "",
                    "the file ends inside a varint (truncated file?)",
                ));
            };
            self.at += 1;
            if i == 9 && b > 1 {
                return Err(err(self.base + start, "", "a varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(err(self.base + start, "", "a varint longer than 10 bytes"))
    }

    fn take(&mut self, n: u64, start: usize) -> Result<&'a [u8], OnnxError> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err(err(
                self.base + start,
                "",
                format!(
                    "a field of {n} bytes runs past the end of its message ({left} bytes left; truncated or corrupt file?)"
                ),
            ));
        }
        let s = &self.bytes[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }

    fn field(&mut self) -> Result<Field<'a>, OnnxError> {
        let start = self.at;
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 || number > (1 << 29) - 1 {
            return Err(err(
                self.base + start,
                "",
                format!("field number {number} is not a protobuf field number: not an ONNX file (or a corrupt one)"),
            ));
        }
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8, start)?;
                Value::Fixed64
            }
            2 => {
                let n = self.varint()?;
                let at = self.base + self.at;
                let b = self.take(n, start)?;
                return Ok(Field {
                    number: number as u32,
                    value: Value::Bytes(b),
                    offset: at,
                });
            }
            5 => {
                self.take(4, start)?;
                Value::Fixed32
            }
            t => {
                return Err(err(
                    self.base + start,
                    "",
                    format!("wire type {t} (field {number}) is not one ONNX uses: not an ONNX file (or a corrupt one)"),
                ))
            }
        };
        Ok(Field {
            number: number as u32,
            value,
            offset: self.base + start,
        })
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, OnnxError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.at >= self.bytes.len() {
            return None;
        }
        let f = self.field();
        self.failed = f.is_err();
        Some(f)
    }
}

/// What `dimguard.onnx.export` stores under [`REPORT_KEY`] (its other fields are ignored here).
#[derive(serde::Deserialize)]
struct Stored<'a> {
    /// The exported program's `dimguard check` JSON (read apart: each size's answer is read
    /// back by [`SizeAnswer::read`]).
    #[serde(borrow)]
    audit: Option<&'a serde_json::value::RawValue>,
    /// Why the program could not be audited.
    #[serde(default)]
    unaudited: Option<String>,
    /// The final `dynamic_shapes` (Python).
    #[serde(default)]
    spec: Option<String>,
    /// How the file's inputs map to the program's.
    #[serde(default)]
    onnx: Option<StoredOnnx>,
}

#[derive(serde::Deserialize, Default)]
struct StoredOnnx {
    /// ONNX input name -> the program's input name.
    #[serde(default)]
    inputs: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    dimguard_version: Option<String>,
}

/// A check report's JSON read back whole: the entries, then each size's answer apart (serde
/// cannot read 128-bit counts in a struct with a flattened field).
fn read_check(text: &str) -> Result<CheckReport, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Dims<'a> {
        #[serde(borrow)]
        dims: Vec<&'a serde_json::value::RawValue>,
    }
    let mut report: CheckReport = serde_json::from_str(text)?;
    let raw: Dims = serde_json::from_str(text)?;
    for (d, r) in report.dims.iter_mut().zip(raw.dims) {
        d.answer = SizeAnswer::read(r.get(), Command::Check)?;
    }
    Ok(report)
}

/// `x[2] = h` for each named axis of the file's inputs.
fn symbolic_axes(m: &OnnxModel) -> Vec<String> {
    let mut out = Vec::new();
    for i in &m.inputs {
        for (k, d) in i.shape.iter().flatten().enumerate() {
            match d {
                OnnxDim::Param(p) => out.push(format!("{}[{k}] = {p}", i.name)),
                OnnxDim::Unknown => out.push(format!("{}[{k}] = ? (no size recorded)", i.name)),
                OnnxDim::Value(_) => {}
            }
        }
    }
    out
}

/// `dimguard check model.onnx`: the report `dimguard.onnx.export` stored in the file, and the
/// file's own inputs, compared. A file without the report is an error that lists its symbolic
/// axes and says how to add the report.
pub fn check(bytes: &[u8], label: &str) -> Result<OnnxReport, Error> {
    let m = read(bytes).map_err(|e| Error::Onnx {
        path: label.into(),
        message: e.to_string(),
    })?;
    let axes = symbolic_axes(&m);
    let bad = |message: String| Error::OnnxReport {
        path: label.into(),
        message,
    };
    let Some(text) = m.metadata(REPORT_KEY) else {
        let what = if axes.is_empty() {
            let shapes: Vec<String> = m
                .inputs
                .iter()
                .map(|i| format!("{} {}", i.name, shape_text(i)))
                .collect();
            format!(
                "its inputs have no symbolic axes ({}): it runs only at those shapes",
                shapes.join(", ")
            )
        } else {
            format!(
                "its symbolic axes are {}: onnxruntime takes any size there, and the guards of the program it came from are gone",
                axes.join(", ")
            )
        };
        return Err(bad(format!(
            "an ONNX file without dimguard's report (metadata_props has no `{REPORT_KEY}`), so the sizes it accepts are not recorded; {what}. \
             To add the set: export with `dimguard.onnx.export(model, args, \"{label}\", dynamic_shapes=...)`, \
             or store the report of the program it was exported from: `dimguard.onnx.attach(\"{label}\", report)` (report: what dimguard.export returned)"
        )));
    };
    let stored: Stored = serde_json::from_str(text).map_err(|e| {
        bad(format!(
            "metadata_props[`{REPORT_KEY}`] is not a report dimguard can read ({e}); export the file again with dimguard.onnx.export"
        ))
    })?;
    let Some(audit) = stored.audit.filter(|a| a.get() != "null") else {
        return Err(bad(format!(
            "the stored report holds no audit of the program ({}), so the sizes the file accepts are not known; export it again with dimguard.onnx.export",
            stored.unaudited.as_deref().unwrap_or("no reason recorded")
        )));
    };
    let report = read_check(audit.get()).map_err(|e| {
        bad(format!(
            "the stored report's audit does not read ({e}); export the file again with dimguard.onnx.export"
        ))
    })?;
    let map = stored.onnx.unwrap_or_default();
    let mut notes = Vec::new();
    let mut inputs = Vec::new();
    for i in &m.inputs {
        let input = map
            .inputs
            .get(&i.name)
            .cloned()
            .unwrap_or_else(|| i.name.clone());
        let program = report.inputs.iter().find(|p| p.input == input);
        match (program, &i.shape) {
            (None, _) => notes.push(format!(
                "the file's input `{}` is not a tensor input of the stored report's program; the report does not decide its sizes",
                i.name
            )),
            (Some(p), Some(shape)) if p.shape.len() != shape.len() => notes.push(format!(
                "`{}` has {} axes in the file but {} in the program",
                i.name,
                shape.len(),
                p.shape.len()
            )),
            (Some(p), Some(shape)) => {
                for (k, (d, e)) in shape.iter().zip(&p.shape).enumerate() {
                    if let (OnnxDim::Value(v), ShapeEntry::Fixed(f)) = (d, e) {
                        if v != f {
                            notes.push(format!(
                                "`{}[{k}]` is {v} in the file but {f} in the program",
                                i.name
                            ));
                        }
                    }
                }
            }
            (Some(_), None) => {}
        }
        inputs.push(OnnxInputShape {
            name: i.name.clone(),
            input,
            shape: i.shape.as_ref().map(|s| {
                s.iter()
                    .map(|d| match d {
                        OnnxDim::Value(v) => Some(ShapeEntry::Fixed(*v)),
                        OnnxDim::Param(p) => Some(ShapeEntry::Symbolic(p.clone())),
                        OnnxDim::Unknown => None,
                    })
                    .collect()
            }),
        });
    }
    for p in &report.inputs {
        if !inputs.iter().any(|i| i.input == p.input) {
            notes.push(format!(
                "the program's input `{}` is not an input of the file (the exporter dropped it)",
                p.input
            ));
        }
    }
    Ok(OnnxReport {
        check: report,
        onnx: OnnxFile {
            file: label.into(),
            opset: m.opset(),
            producer: m.producer.clone(),
            inputs,
            symbolic: axes,
            spec: stored.spec,
            dimguard_version: map.dimguard_version,
            notes,
        },
    })
}

/// `[batch, 3, 224, ?]`.
fn shape_text(i: &OnnxInput) -> String {
    match &i.shape {
        None => "(no shape recorded)".into(),
        Some(s) => {
            let parts: Vec<String> = s
                .iter()
                .map(|d| match d {
                    OnnxDim::Value(v) => v.to_string(),
                    OnnxDim::Param(p) => p.clone(),
                    OnnxDim::Unknown => "?".into(),
                })
                .collect();
            format!("[{}]", parts.join(", "))
        }
    }
}
