//! The operator graph (petgraph), symbolic propagation of sizes through it, and Graphviz output.

use crate::program::{tensor_name, Error, Node, Program, Size};
use crate::shapes::{self, Env, Inferred};
use dimguard_solver::report::{Disagreement, Propagation};
use dimguard_solver::Expr;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use std::collections::{BTreeMap, BTreeSet};

/// A vertex: a graph input or an operator.
#[derive(Debug, Clone)]
pub struct Vertex {
    /// Node or input name.
    pub name: String,
    /// `input` for graph inputs, else the operator target.
    pub target: String,
}

/// An edge: a tensor (or SymInt) flowing from producer to consumer.
#[derive(Debug, Clone)]
pub struct Flow {
    /// The value's name.
    pub value: String,
}

/// The program as a graph, with propagated sizes.
pub struct ProgramGraph {
    /// Operators and inputs; edges carry values.
    pub graph: DiGraph<Vertex, Flow>,
    /// Sizes of every tensor after propagation (recorded where no shape function applies).
    pub sizes: BTreeMap<String, Vec<Expr>>,
    /// Values of SymInts.
    pub symints: BTreeMap<String, Expr>,
    /// What propagation found.
    pub report: Propagation,
    /// The conditions each operator's shape rule needs (broadcast and `cat` sizes agree), in
    /// program order: where a run-time assert of torch raises.
    pub requires: Vec<Requirement>,
}

/// A condition an operator needs of its input sizes (from its shape rule).
#[derive(Debug, Clone)]
pub struct Requirement {
    /// The node.
    pub node: String,
    /// Its operator.
    pub target: String,
    /// Its stack trace, when recorded.
    pub stack_trace: Option<String>,
    /// The condition, over the program's symbols.
    pub condition: Expr,
}

/// Symbol -> (lo, hi) used to compare expressions (from `range_constraints`).
pub type SymbolRanges = BTreeMap<String, (i128, i128)>;

/// The claimed range of each input symbol (`range_constraints` keys that are symbols).
pub fn symbol_ranges(p: &Program) -> SymbolRanges {
    p.range_constraints
        .iter()
        .filter(|(k, _)| k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(|(k, r)| {
            let lo = r.min_val.unwrap_or(0) as i128;
            let hi = r.max_val.map_or(dimguard_solver::SIZE_MAX, |v| v as i128);
            (k.clone(), (lo, hi))
        })
        .collect()
}

/// Whether two size expressions agree on sample points in the symbols' ranges; `Err(witness)`
/// when they do not. The points are the ranges' ends and a fixed pseudo-random sample.
pub fn agree(
    a: &Expr,
    b: &Expr,
    ranges: &SymbolRanges,
    hints: &BTreeMap<String, i128>,
) -> Result<(), BTreeMap<String, i128>> {
    if a == b {
        return Ok(());
    }
    let syms: BTreeSet<String> = a
        .atoms()
        .iter()
        .chain(b.atoms().iter())
        .map(|s| s.to_string())
        .collect();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for k in 0..40 {
        let point: BTreeMap<String, i128> = syms
            .iter()
            .map(|s| {
                let (lo, hi) = ranges.get(s).copied().unwrap_or((2, 4096));
                let hi = hi.min(lo + 1_000_000).max(lo);
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = match k {
                    0 => hints.get(s).copied().unwrap_or(lo),
                    1 => lo,
                    2 => hi,
                    _ => lo + (seed >> 11) as i128 % (hi - lo + 1),
                };
                (s.clone(), v)
            })
            .collect();
        let env = |n: &str| point.get(n).copied();
        if let (Ok(x), Ok(y)) = (a.eval(&env), b.eval(&env)) {
            if x != y {
                return Err(point);
            }
        }
    }
    Ok(())
}

impl ProgramGraph {
    /// Builds the graph and propagates sizes from the inputs.
    pub fn build(p: &Program) -> Result<ProgramGraph, Error> {
        let mut b = Builder::new(p);
        b.inputs()?;
        for node in &p.graph_module.graph.nodes {
            b.node(node)?;
        }
        Ok(ProgramGraph {
            graph: b.graph,
            sizes: b.sizes,
            symints: b.symints,
            report: b.report,
            requires: b.requires,
        })
    }

    /// Operator names in a topological order.
    pub fn topological(&self) -> Vec<String> {
        petgraph::algo::toposort(&self.graph, None)
            .map(|order| {
                order
                    .into_iter()
                    .map(|i| self.graph[i].name.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Graphviz DOT, each edge labeled with its value's symbolic shape.
    pub fn dot(&self) -> String {
        let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let mut out = String::from(
            "digraph program {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n",
        );
        for i in self.graph.node_indices() {
            let v = &self.graph[i];
            let short = shapes::op_name(&v.target);
            let shape = if v.target == "input" {
                ", shape=ellipse"
            } else {
                ""
            };
            out.push_str(&format!(
                "  n{} [label=\"{}\\n{}\"{shape}];\n",
                i.index(),
                esc(&v.name),
                esc(short)
            ));
        }
        for e in self.graph.edge_references() {
            let label = match self.sizes.get(&e.weight().value) {
                Some(s) => format!(
                    "[{}]",
                    s.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => e.weight().value.clone(),
            };
            out.push_str(&format!(
                "  n{} -> n{} [label=\"{}\"];\n",
                e.source().index(),
                e.target().index(),
                esc(&label)
            ));
        }
        out.push_str("}\n");
        out
    }
}

/// Names of tensors and SymInts an argument refers to.
fn referenced(v: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(n) = tensor_name(v) {
        out.push(n.to_string());
    }
    if let Some(n) = crate::program::sym_int_name(v) {
        out.push(n.to_string());
    }
    if let Some(n) = v
        .get("as_sym_bool")
        .and_then(|b| b.get("as_name"))
        .and_then(|n| n.as_str())
    {
        out.push(n.to_string());
    }
    if let Some(ts) = v.get("as_tensors").and_then(|t| t.as_array()) {
        out.extend(
            ts.iter()
                .filter_map(|t| t.get("name")?.as_str())
                .map(String::from),
        );
    }
    if let Some(ts) = v.get("as_sym_ints").and_then(|t| t.as_array()) {
        out.extend(
            ts.iter()
                .filter_map(|t| t.get("as_name")?.as_str())
                .map(String::from),
        );
    }
    out
}

/// [`ProgramGraph::build`]'s state: the graph so far, who produced each value, the sizes and
/// SymInts known, and what propagation found.
struct Builder<'p> {
    p: &'p Program,
    ranges: SymbolRanges,
    graph: DiGraph<Vertex, Flow>,
    producer: BTreeMap<String, NodeIndex>,
    sizes: BTreeMap<String, Vec<Expr>>,
    /// Each input symbol's traced value.
    hints: BTreeMap<String, i128>,
    symints: BTreeMap<String, Expr>,
    report: Propagation,
    guards_seen: BTreeSet<String>,
    requires: Vec<Requirement>,
}

impl<'p> Builder<'p> {
    fn new(p: &'p Program) -> Self {
        Builder {
            p,
            ranges: symbol_ranges(p),
            graph: DiGraph::new(),
            producer: BTreeMap::new(),
            sizes: BTreeMap::new(),
            hints: BTreeMap::new(),
            symints: BTreeMap::new(),
            report: Propagation::default(),
            guards_seen: BTreeSet::new(),
            requires: Vec::new(),
        }
    }

    /// A vertex per graph input, with its recorded sizes and its symbols' traced values.
    fn inputs(&mut self) -> Result<(), Error> {
        for inp in &self.p.graph_module.graph.inputs {
            let Some(name) = tensor_name(inp) else {
                continue;
            };
            let v = self.graph.add_node(Vertex {
                name: name.into(),
                target: "input".into(),
            });
            self.producer.insert(name.into(), v);
            if let Some(s) = self.p.sizes(name)? {
                for sz in &s {
                    if let Size::Expr(Expr::Sym(a), Some(h)) = sz {
                        self.hints.insert(a.to_string(), *h);
                    }
                }
                self.sizes
                    .insert(name.into(), s.iter().map(Size::expr).collect());
            }
        }
        Ok(())
    }

    /// One operator: its vertex and the edges of the values it reads, then its outputs' sizes
    /// by its shape rule ([`shapes::infer`]), or as recorded when no rule applies.
    fn node(&mut self, node: &Node) -> Result<(), Error> {
        let vname = node.name.clone().unwrap_or_else(|| node.target.clone());
        let v = self.graph.add_node(Vertex {
            name: vname.clone(),
            target: node.target.clone(),
        });
        for arg in &node.inputs {
            for value in referenced(&arg.arg) {
                if let Some(&from) = self.producer.get(&value) {
                    self.graph.add_edge(from, v, Flow { value });
                }
            }
        }
        let inferred = shapes::infer(
            node,
            &Env {
                tensors: &self.sizes,
                symints: &self.symints,
            },
        )?;
        let outputs: Vec<String> = node.outputs.iter().flat_map(referenced).collect();
        for o in &outputs {
            self.producer.insert(o.clone(), v);
        }
        match inferred {
            None => {
                if !self.report.unchecked.contains(&node.target) {
                    self.report.unchecked.push(node.target.clone());
                }
                for o in &outputs {
                    if let Some(s) = self.p.sizes(o)? {
                        self.sizes
                            .insert(o.clone(), s.iter().map(Size::expr).collect());
                    }
                }
                Ok(())
            }
            Some(inf) => self.inferred(node, &vname, inf),
        }
    }

    /// What an operator's shape rule gave: its conditions (each guard text once in the
    /// report), its SymInts, and each output's sizes against the recorded ones.
    fn inferred(&mut self, node: &Node, vname: &str, inf: Inferred) -> Result<(), Error> {
        self.report.checked += 1;
        for gd in inf.guards {
            self.requires.push(Requirement {
                node: vname.to_string(),
                target: node.target.clone(),
                stack_trace: stack_trace(node),
                condition: gd.clone(),
            });
            let t = gd.to_string();
            if self.guards_seen.insert(t.clone()) {
                self.report.guards.push(t);
            }
        }
        for (name, e) in inf.symints {
            self.symints.insert(name, e);
        }
        // Outputs: single tensors by position, then tensors returned in a list.
        let mut pairs: Vec<(String, Option<Vec<Expr>>)> = node
            .outputs
            .iter()
            .enumerate()
            .filter_map(|(i, o)| {
                tensor_name(o).map(|n| (n.to_string(), inf.tensors.get(i).cloned().flatten()))
            })
            .collect();
        let listed: Vec<String> = node
            .outputs
            .iter()
            .filter_map(|o| o.get("as_tensors").and_then(|t| t.as_array()))
            .flatten()
            .filter_map(|t| t.get("name").and_then(|n| n.as_str()).map(String::from))
            .collect();
        for (k, n) in listed.into_iter().enumerate() {
            pairs.push((n, inf.listed.get(k).cloned()));
        }
        for (out, computed) in pairs {
            self.output(node, vname, &out, computed)?;
        }
        Ok(())
    }

    /// One output's sizes: computed and recorded compared (a disagreement reported, with a
    /// witness), the recorded ones kept (they carry torch's own simplification), the computed
    /// ones filled in where none are recorded.
    fn output(
        &mut self,
        node: &Node,
        vname: &str,
        out: &str,
        computed: Option<Vec<Expr>>,
    ) -> Result<(), Error> {
        let recorded = self
            .p
            .sizes(out)?
            .map(|s| s.iter().map(Size::expr).collect::<Vec<_>>());
        match (computed, recorded) {
            (Some(c), Some(r)) => {
                let mismatch = if c.len() != r.len() {
                    Some(BTreeMap::new())
                } else {
                    c.iter()
                        .zip(&r)
                        .find_map(|(x, y)| agree(x, y, &self.ranges, &self.hints).err())
                };
                if let Some(witness) = mismatch {
                    self.report.disagreements.push(Disagreement {
                        node: vname.to_string(),
                        target: node.target.clone(),
                        tensor: out.to_string(),
                        recorded: r.iter().map(|e| e.to_string()).collect(),
                        computed: c.iter().map(|e| e.to_string()).collect(),
                        witness,
                        stack_trace: stack_trace(node),
                    });
                }
                self.sizes.insert(out.to_string(), r);
            }
            (Some(c), None) => {
                self.report.filled.push(out.to_string());
                self.sizes.insert(out.to_string(), c);
            }
            (None, Some(r)) => {
                self.sizes.insert(out.to_string(), r);
            }
            (None, None) => {}
        }
        Ok(())
    }
}

/// A node's recorded stack trace.
fn stack_trace(node: &Node) -> Option<String> {
    node.metadata
        .get("stack_trace")
        .and_then(|s| s.as_str())
        .map(String::from)
}
