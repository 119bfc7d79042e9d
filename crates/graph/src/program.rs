//! Reading an exported program: a `.pt2` archive (`torch.export.save`) or its `model.json`.
//!
//! Only the parts dimguard uses are typed; unknown fields are ignored, so archives from other
//! PyTorch versions read as long as these parts keep their meaning. Arguments stay JSON values
//! (`{"as_tensor": {"name": ...}}`, `{"as_ints": [...]}`, ...) read through small accessors.

use dimguard_solver::parse_expr;
use dimguard_solver::report::ProgramBound;
use dimguard_solver::Expr;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

pub use crate::error::Error;

/// The top level of `model.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Program {
    /// The graph and its signature.
    pub graph_module: GraphModule,
    /// Symbol (or expression) -> claimed range.
    #[serde(default)]
    pub range_constraints: BTreeMap<String, Range>,
    /// Guards checked at run time, in guard-code syntax.
    #[serde(default)]
    pub guards_code: Vec<String>,
    /// Serialization schema version.
    #[serde(default)]
    pub schema_version: Option<Value>,
    /// The PyTorch that wrote it.
    #[serde(default)]
    pub torch_version: Option<String>,
}

/// `range_constraints` entry; `null` bounds are unbounded.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Range {
    /// Lower bound.
    pub min_val: Option<i64>,
    /// Upper bound.
    pub max_val: Option<i64>,
}

/// `graph_module`.
#[derive(Debug, Clone, Deserialize)]
pub struct GraphModule {
    /// The graph.
    pub graph: Graph,
    /// Which graph inputs are user inputs, parameters, buffers.
    #[serde(default)]
    pub signature: Option<Value>,
}

/// The FX graph.
#[derive(Debug, Clone, Deserialize)]
pub struct Graph {
    /// Graph inputs (parameters, buffers and user inputs, in order).
    pub inputs: Vec<Value>,
    /// Graph outputs.
    pub outputs: Vec<Value>,
    /// Operator nodes in program order.
    pub nodes: Vec<Node>,
    /// Tensor metadata by name.
    #[serde(default)]
    pub tensor_values: BTreeMap<String, TensorMeta>,
    /// SymInt values by name.
    #[serde(default)]
    pub sym_int_values: BTreeMap<String, Value>,
    /// SymBool values by name (the conditions of run-time asserts).
    #[serde(default)]
    pub sym_bool_values: BTreeMap<String, Value>,
}

/// One operator call.
#[derive(Debug, Clone, Deserialize)]
pub struct Node {
    /// `torch.ops.aten.conv2d.default`, `_operator.add`, ...
    pub target: String,
    /// Named arguments.
    pub inputs: Vec<NamedArg>,
    /// Results.
    pub outputs: Vec<Value>,
    /// Stack trace and module path.
    #[serde(default)]
    pub metadata: BTreeMap<String, Value>,
    /// Node name.
    #[serde(default)]
    pub name: Option<String>,
}

impl Node {
    /// The argument `name`, else the one at position `pos`; `None` when absent or Python's
    /// `None`. Every reader of a node's arguments goes through it.
    pub fn arg(&self, name: &str, pos: usize) -> Option<&Value> {
        self.inputs
            .iter()
            .find(|a| a.name == name)
            .or_else(|| self.inputs.get(pos))
            .map(|a| &a.arg)
            .filter(|v| v.get("as_none").is_none())
    }
}

/// `{ "name": ..., "arg": {...} }`.
#[derive(Debug, Clone, Deserialize)]
pub struct NamedArg {
    /// Parameter name.
    pub name: String,
    /// The argument.
    pub arg: Value,
}

/// Tensor metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct TensorMeta {
    /// Sizes: `{"as_int": n}` or `{"as_expr": {"expr_str": srepr, "hint": {...}}}`.
    pub sizes: Vec<Value>,
    /// Dtype code.
    #[serde(default)]
    pub dtype: Option<i64>,
}

/// A size: a constant or a symbolic expression (with its example value).
#[derive(Debug, Clone, PartialEq)]
pub enum Size {
    /// Static.
    Int(i128),
    /// Symbolic, with the traced value when recorded.
    Expr(Expr, Option<i128>),
}

impl Size {
    /// The size as an expression.
    pub fn expr(&self) -> Expr {
        match self {
            Size::Int(n) => Expr::int(*n),
            Size::Expr(e, _) => e.clone(),
        }
    }
}

/// Reads a `.pt2` archive (found by content: the JSON entry with a `graph_module`) or a
/// `model.json`.
pub fn load(path: &Path) -> Result<Program, Error> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| Error::Read {
        path: p.clone(),
        source,
    })?;
    load_bytes(bytes, &p)
}

/// Reads a program from memory: the bytes of a `.pt2` archive or of its `model.json`; `label`
/// names it in errors.
pub fn load_bytes(bytes: Vec<u8>, label: &str) -> Result<Program, Error> {
    let json = if bytes.starts_with(b"PK") {
        program_json_from_zip(&bytes, label)?
    } else {
        bytes
    };
    parse(&json, label)
}

/// Reads a program from its JSON (`path` names it in errors) and checks what the rest of
/// dimguard relies on: every `range_constraints` entry is a non-empty range.
pub fn parse(json: &[u8], path: &str) -> Result<Program, Error> {
    let program: Program = serde_json::from_slice(json).map_err(|e| Error::NotAProgram {
        path: path.into(),
        message: e.to_string(),
    })?;
    for (symbol, r) in &program.range_constraints {
        if let (Some(min), Some(max)) = (r.min_val, r.max_val) {
            if min > max {
                return Err(Error::EmptyRange {
                    path: path.into(),
                    symbol: symbol.clone(),
                    min,
                    max,
                });
            }
        }
    }
    Ok(program)
}

/// The manifest of a `dimguard.Dispatch` archive (`python/dimguard/cover.py`): several exported
/// programs behind one callable.
pub const DISPATCH_MANIFEST: &str = "dimguard-dispatch.json";

/// One program of a `dimguard.Dispatch` archive: its entry name and its `.pt2` bytes.
pub type Member = (String, Vec<u8>);

/// The programs of a `dimguard.Dispatch` archive, in the manifest's order, as `(entry name, the
/// program's .pt2 bytes)`; `None` when `bytes` is not such an archive. The manifest's own claims
/// (each program's accepted set) are not read: `check` decides them from the programs.
pub fn dispatch_programs(bytes: &[u8], path: &str) -> Result<Option<Vec<Member>>, Error> {
    if !bytes.starts_with(b"PK") {
        return Ok(None);
    }
    let zip_err = |e: zip::result::ZipError| Error::Zip {
        path: path.into(),
        message: e.to_string(),
    };
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(zip_err)?;
    let manifest: Value = match zip.by_name(DISPATCH_MANIFEST) {
        Ok(mut f) => {
            let mut buf = Vec::new();
            f.read_to_end(&mut buf).map_err(|e| Error::Zip {
                path: path.into(),
                message: e.to_string(),
            })?;
            serde_json::from_slice(&buf).map_err(|e| Error::NotAProgram {
                path: format!("{path}: {DISPATCH_MANIFEST}"),
                message: e.to_string(),
            })?
        }
        Err(_) => return Ok(None),
    };
    let files: Vec<String> = manifest
        .get("pieces")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| p.get("file").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if files.is_empty() {
        return Err(Error::NoProgram {
            path: path.into(),
            entries: format!("{DISPATCH_MANIFEST} lists no program"),
        });
    }
    let mut out = Vec::new();
    for name in files {
        let mut f = zip.by_name(&name).map_err(zip_err)?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).map_err(|e| Error::Zip {
            path: format!("{path}: {name}"),
            message: e.to_string(),
        })?;
        out.push((name, buf));
    }
    Ok(Some(out))
}

fn program_json_from_zip(bytes: &[u8], path: &str) -> Result<Vec<u8>, Error> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| Error::Zip {
        path: path.into(),
        message: e.to_string(),
    })?;
    let names: Vec<String> = zip.file_names().map(String::from).collect();
    // Prefer the conventional location, then any JSON holding a graph_module.
    let mut order: Vec<&String> = names.iter().filter(|n| n.ends_with(".json")).collect();
    order.sort_by_key(|n| !n.ends_with("models/model.json"));
    for n in order {
        let mut f = zip.by_name(n).map_err(|e| Error::Zip {
            path: path.into(),
            message: e.to_string(),
        })?;
        let mut buf = Vec::new();
        if f.read_to_end(&mut buf).is_ok() && contains(&buf, b"\"graph_module\"") {
            return Ok(buf);
        }
    }
    Err(Error::NoProgram {
        path: path.into(),
        entries: names.iter().take(8).cloned().collect::<Vec<_>>().join(", "),
    })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `{"as_tensor": {"name": n}}` -> `n`.
pub fn tensor_name(v: &Value) -> Option<&str> {
    v.get("as_tensor")?.get("name")?.as_str()
}

/// `{"as_sym_int": {"as_name": n}}` -> `n`.
pub fn sym_int_name(v: &Value) -> Option<&str> {
    v.get("as_sym_int")?.get("as_name")?.as_str()
}

/// A size from its JSON form.
pub fn size(v: &Value, tensor: &str) -> Result<Size, Error> {
    if let Some(n) = v.get("as_int").and_then(Value::as_i64) {
        return Ok(Size::Int(n as i128));
    }
    if let Some(e) = v.get("as_expr") {
        let text = e.get("expr_str").and_then(Value::as_str).unwrap_or("");
        let hint = e
            .get("hint")
            .and_then(|h| h.get("as_int"))
            .and_then(Value::as_i64)
            .map(i128::from);
        let expr = parse_expr(text).map_err(|error| Error::Expr {
            tensor: tensor.into(),
            error: Box::new(error),
        })?;
        return Ok(Size::Expr(expr, hint));
    }
    Err(Error::NotAProgram {
        path: String::new(),
        message: format!("unexpected size {v} of `{tensor}`"),
    })
}

impl Program {
    /// The bound this program implies for a size Torch-TensorRT found no max bound for: the
    /// range torch recorded for `symbol` (`u0`, `s3`) in `range_constraints`, which holds the
    /// program's own `torch._check`s (kept as run-time asserts) and guards; a `symbol` that is a
    /// source (`x.shape[0]`) is that input dimension's symbol, or its static size. Its upper end
    /// is sound: the program accepts no size above it. No range, or no upper end: no bound.
    pub fn missing_bound(&self, symbol: &str, path: &str) -> ProgramBound {
        let range = if dimguard_solver::is_size_symbol(symbol) {
            self.symbol_range(symbol)
        } else {
            dimguard_solver::python::input_dim(symbol)
                .and_then(|(x, i)| self.sizes(&x).ok().flatten()?.into_iter().nth(i))
                .and_then(|size| match size {
                    Size::Int(n) => Some([Some(n), Some(n)]),
                    Size::Expr(Expr::Sym(a), _) => self.symbol_range(&a),
                    Size::Expr(..) => None,
                })
        };
        ProgramBound {
            path: path.to_string(),
            range,
            max: range.and_then(|[_, hi]| hi),
        }
    }

    /// `range_constraints[symbol]` as `[lo, hi]` (`None`: unbounded on that side).
    fn symbol_range(&self, symbol: &str) -> Option<[Option<i128>; 2]> {
        self.range_constraints
            .get(symbol)
            .map(|r| [r.min_val.map(i128::from), r.max_val.map(i128::from)])
    }

    /// The recorded sizes of a tensor.
    pub fn sizes(&self, tensor: &str) -> Result<Option<Vec<Size>>, Error> {
        match self.graph_module.graph.tensor_values.get(tensor) {
            None => Ok(None),
            Some(m) => m
                .sizes
                .iter()
                .map(|v| size(v, tensor))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
        }
    }

    /// User inputs (not parameters or buffers): `(name, graph input index)`.
    pub fn user_inputs(&self) -> Vec<String> {
        let specs = self
            .graph_module
            .signature
            .as_ref()
            .and_then(|s| s.get("input_specs"))
            .and_then(Value::as_array);
        match specs {
            Some(specs) => specs
                .iter()
                .filter_map(|s| s.get("user_input"))
                .filter_map(|u| u.get("arg").and_then(tensor_name))
                .map(String::from)
                .collect(),
            // Without a signature: every tensor input not named like a parameter or buffer.
            None => self
                .graph_module
                .graph
                .inputs
                .iter()
                .filter_map(tensor_name)
                .filter(|n| !n.starts_with("p_") && !n.starts_with("b_") && !n.starts_with("c_"))
                .map(String::from)
                .collect(),
        }
    }
}
