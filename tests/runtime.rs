//! Run-time asserts and implied limits (torch 2.15 programs made by `tools/export_asserts.py`):
//! `check`'s accepted set equals the sizes at which the exported program really runs, found by
//! running `ep.module()` at every size of the range (`<name>.truth.json`).

use dimguard::commands::check::check;
use dimguard::graph::load;
use dimguard::solver::report::{GuardFate, RuntimeKind};
use dimguard::solver::DimSet;
use std::collections::BTreeSet;

mod common;
use common::{data_json, data_path};

struct Truth {
    lo: i128,
    hi: i128,
    runs: BTreeSet<i128>,
}

fn truth(name: &str) -> Truth {
    let t = data_json(&format!("pt2/{name}.truth.json"));
    let c = t["claimed"].as_array().unwrap();
    Truth {
        lo: c[0].as_i64().unwrap() as i128,
        hi: c[1].as_i64().unwrap() as i128,
        runs: t["accepted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap() as i128)
            .collect(),
    }
}

/// Checks the program, compares its one dynamic size's accepted set with the truth over the
/// whole range it was run at, and returns the report.
fn agrees(name: &str) -> dimguard::solver::report::CheckReport {
    let p = load(&data_path(&format!("pt2/{name}.pt2"))).unwrap();
    let r = check(&p, false).unwrap();
    let t = truth(name);
    assert_eq!(r.dims.len(), 1, "{name}");
    let d = &r.dims[0];
    assert!(
        d.answer.undecided.is_none(),
        "{name}: {:?}",
        d.answer.undecided
    );
    let a = d.answer.accepted.as_ref().unwrap();
    let accepted: BTreeSet<i128> = DimSet::from_segments(a.segments.clone())
        .unwrap()
        .iter()
        .collect();
    let (cmin, cmax) = (d.claimed.min.unwrap(), d.claimed.max.unwrap());
    // Sizes outside the claimed range are refused when the program is called.
    let runs: BTreeSet<i128> = t
        .runs
        .iter()
        .copied()
        .filter(|v| (cmin..=cmax).contains(v))
        .collect();
    assert_eq!(
        runs.len(),
        t.runs.len(),
        "{name}: runs outside its claimed range"
    );
    assert!(
        t.lo <= cmin && cmax <= t.hi,
        "{name}: the truth covers the claimed range"
    );
    let wrong: Vec<_> = accepted.symmetric_difference(&runs).take(10).collect();
    assert!(
        wrong.is_empty(),
        "{name}: accepted differs from running the program at {wrong:?}"
    );
    assert_eq!(a.count as usize, runs.len(), "{name}");
    r
}

#[test]
fn fpn_assert_accepts_exactly_where_the_program_runs() {
    let r = agrees("fpn_assert");
    // torch's range asserts and the FPN's: 465 of 929 run.
    assert_eq!(r.dims[0].claimed.count, 929);
    assert_eq!(r.dims[0].answer.accepted.as_ref().unwrap().count, 465);
    let asserts: Vec<_> = r
        .runtime
        .iter()
        .filter(|c| c.kind == RuntimeKind::RuntimeAssert)
        .collect();
    assert_eq!(asserts.len(), 3);
    let fpn = asserts.iter().find(|c| c.rejects == Some(464)).unwrap();
    assert!(fpn.condition.contains("// 8"), "{}", fpn.condition);
    assert_eq!(fpn.fate, GuardFate::Periodic);
    // torch placed the assert at the start of the graph: the operator that needs it is the add
    // of the two maps, with the model's line.
    let n = fpn.needed_by.as_ref().unwrap();
    assert_eq!(n.target, "torch.ops.aten.add.Tensor");
    assert!(n.stack_trace.as_deref().unwrap().contains("in forward"));
}

#[test]
fn bert_positions_assert_min_of_the_table() {
    let r = agrees("bert_positions");
    assert_eq!(r.dims[0].answer.accepted.as_ref().unwrap().max, Some(128));
    assert!(r
        .runtime
        .iter()
        .any(|c| c.condition.contains("min(128") && c.rejects == Some(384)));
}

#[test]
fn gpt2_positions_limit_no_guard_states() {
    let p = load(&data_path("pt2/gpt2_positions.pt2")).unwrap();
    assert!(p.guards_code.is_empty());
    let r = agrees("gpt2_positions");
    let limits: Vec<_> = r
        .runtime
        .iter()
        .filter(|c| c.kind == RuntimeKind::ImpliedLimit)
        .collect();
    assert_eq!(limits.len(), 1, "{:?}", r.runtime);
    let l = limits[0];
    assert_eq!(l.target, "torch.ops.aten.embedding.default");
    assert_eq!(l.condition, "s27 <= 128");
    assert_eq!(l.on_inputs.as_deref(), Some("L['ids'].size()[1] <= 128"));
    assert_eq!(l.rejects, Some(384));
    assert!(l.stack_trace.as_deref().unwrap().contains("wpe(pos)"));
}

#[test]
fn own_check_is_a_run_time_assert() {
    let r = agrees("own_check");
    assert!(r
        .runtime
        .iter()
        .any(|c| c.on_inputs.as_deref() == Some("(L['x'].size()[2] % 4) == 0")));
}

#[test]
fn relative_position_index_from_an_outer_difference() {
    // table[arange(n)[:, None] - arange(n)[None, :] + 63] over 127 rows: negative indices wrap,
    // so only the upper end limits n.
    let r = agrees("relpos_derived");
    let (l,) = match &r.runtime[..] {
        [l] => (l,),
        other => panic!("{other:?}"),
    };
    assert_eq!(l.kind, RuntimeKind::ImpliedLimit);
    assert_eq!(l.target, "torch.ops.aten.index.Tensor");
    assert_eq!(l.condition, "s27 <= 64");
    assert_eq!(r.dims[0].answer.accepted.as_ref().unwrap().max, Some(64));
}

#[test]
fn an_index_not_followed_is_undecided_never_accepted() {
    // embedding(table[1024], arange(n) * arange(n)): raises above 32; dimguard does not follow
    // an elementwise product of indices, so every claimed size is undecided.
    let p = load(&data_path("pt2/square_positions.pt2")).unwrap();
    let r = check(&p, false).unwrap();
    let t = truth("square_positions");
    let d = &r.dims[0];
    assert_eq!(d.answer.accepted.as_ref().unwrap().count, 0);
    let u = d.answer.undecided.as_ref().unwrap();
    assert_eq!(u.count, d.claimed.count);
    assert!(u.reason.contains("`mul`"), "{}", u.reason);
    assert!(
        t.runs.len() < d.claimed.count as usize,
        "some sizes really fail"
    );
    let l = &r.runtime[0];
    assert_eq!(
        (l.kind, l.fate),
        (RuntimeKind::ImpliedLimit, GuardFate::Undecided)
    );
    assert!(l.on_inputs.is_none());
}

#[test]
fn an_assert_on_a_value_from_data_makes_the_sizes_it_names_undecided() {
    // `n = k.item()`, `torch._check(n <= x.shape[1])`: whether a size runs depends on `k`.
    let p = load(&data_path("pt2/data_assert.pt2")).unwrap();
    let r = check(&p, false).unwrap();
    let d = &r.dims[0];
    assert_eq!(d.answer.accepted.as_ref().unwrap().count, 0);
    assert_eq!(d.answer.undecided.as_ref().unwrap().count, d.claimed.count);
    let on_x: Vec<_> = r.runtime.iter().filter(|c| !c.sizes.is_empty()).collect();
    assert_eq!(on_x.len(), 1, "{:?}", r.runtime);
    assert!(on_x[0].reason.as_deref().unwrap().contains("no input size"));
    assert!(r.runtime.iter().all(|c| c.fate == GuardFate::Undecided));
    // With k = 3 the program ran at every size but 2: sizes do not decide it.
    assert_eq!(truth("data_assert").runs.len(), 62);
}

#[test]
fn transformers_bert_and_gpt2_built_from_configs() {
    // BertModel under ShapesSpec: the position embeddings' broadcast asserts; GPT2Model under
    // plain Dim: wpe(position_ids) with no guard. 128 positions each.
    for (name, kind) in [
        ("hf_bert_positions", RuntimeKind::RuntimeAssert),
        ("hf_gpt2_positions", RuntimeKind::ImpliedLimit),
    ] {
        let r = agrees(name);
        assert_eq!(
            r.dims[0].answer.accepted.as_ref().unwrap().max,
            Some(128),
            "{name}"
        );
        let c = r
            .runtime
            .iter()
            .find(|c| c.rejects == Some(384))
            .unwrap_or_else(|| panic!("{name}: {:?}", r.runtime));
        assert_eq!(c.kind, kind, "{name}");
    }
}

/// The program JSON inside a fixture's archive.
fn model_json(name: &str) -> serde_json::Value {
    let bytes = std::fs::read(data_path(&format!("pt2/{name}.pt2"))).unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let entry = format!("{name}/models/model.json");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut zip.by_name(&entry).unwrap(), &mut text).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn accepted_of(v: &serde_json::Value) -> (BTreeSet<i128>, Option<u128>) {
    let p = dimguard::graph::load_bytes(serde_json::to_vec(v).unwrap(), "edited").unwrap();
    let r = check(&p, false).unwrap();
    let d = &r.dims[0];
    let a = DimSet::from_segments(d.answer.accepted.as_ref().unwrap().segments.clone())
        .unwrap()
        .iter()
        .collect();
    (a, d.answer.undecided.as_ref().map(|u| u.count))
}

fn nodes(v: &mut serde_json::Value) -> &mut Vec<serde_json::Value> {
    v["graph_module"]["graph"]["nodes"].as_array_mut().unwrap()
}

#[test]
fn an_assert_is_read_from_its_node_chain_and_from_its_message() {
    let truth: BTreeSet<i128> = truth("fpn_assert").runs;
    let mut v = model_json("fpn_assert");
    // Without torch's expressions: the chain of SymInt nodes.
    v["graph_module"]["graph"]["sym_bool_values"] = serde_json::json!({});
    assert_eq!(accepted_of(&v), (truth.clone(), None));
    // Without the chain's last step either: the assert's message.
    for n in nodes(&mut v) {
        if n["name"] == "eq" {
            n["target"] = "_operator.not_an_operator".into();
        }
    }
    assert_eq!(accepted_of(&v), (truth.clone(), None));
    // Without the message too: undecided, every claimed size.
    for n in nodes(&mut v) {
        if n["name"] == "_assert_scalar_default_2" {
            n["inputs"].as_array_mut().unwrap().truncate(1);
        }
    }
    let (a, u) = accepted_of(&v);
    assert!(a.is_empty());
    assert_eq!(u, Some(929));
}

#[test]
fn sym_constrain_range_for_size_bounds_the_size() {
    // The FPN's `u0 <= 1024` assert replaced by sym_constrain_range_for_size(u0, 96, 500).
    let mut v = model_json("fpn_assert");
    for n in nodes(&mut v) {
        if n["name"] == "_assert_scalar_default_1" {
            n["target"] = "torch.ops.aten.sym_constrain_range_for_size.default".into();
            n["inputs"] = serde_json::json!([
                {"name": "size", "arg": {"as_sym_int": {"as_name": "sym_size_int"}}},
                {"name": "min", "arg": {"as_int": 96}},
                {"name": "max", "arg": {"as_int": 500}},
            ]);
        }
    }
    let want: BTreeSet<i128> = truth("fpn_assert")
        .runs
        .into_iter()
        .filter(|&h| h <= 500)
        .collect();
    assert_eq!(accepted_of(&v), (want, None));
}

#[test]
fn index_select_and_gather_limits() {
    let r = agrees("select_gather");
    let limits: Vec<(&str, &str)> = r
        .runtime
        .iter()
        .map(|c| (c.target.as_str(), c.condition.as_str()))
        .collect();
    assert_eq!(
        limits,
        [
            ("torch.ops.aten.index_select.default", "s27 <= 100"),
            ("torch.ops.aten.gather.default", "s27 <= 90")
        ]
    );
}

#[test]
fn assert_async_of_a_scalar_tensor() {
    let r = agrees("assert_async");
    let c = &r.runtime[0];
    assert_eq!(c.target, "torch.ops.aten._assert_async.default");
    assert_eq!(c.on_inputs.as_deref(), Some("(L['x'].size()[1] % 3) == 0"));
    assert!(
        r.propagation.unchecked.is_empty(),
        "{:?}",
        r.propagation.unchecked
    );
}

#[test]
fn t5_relative_position_buckets_are_bounded_through_log_where_and_min() {
    // T5's bidirectional buckets into a 32-row table: every size runs, and the index is bounded
    // (0..=31) through `abs`, `log`, `where` and `min`: every size decided, accepted.
    let r = agrees("t5_buckets");
    assert!(
        r.runtime.iter().all(|c| c.fate != GuardFate::Undecided),
        "{:?}",
        r.runtime
    );
}

#[test]
fn t5_buckets_without_their_clamp_are_never_accepted() {
    // The same buckets without `min(..., 15)`: an IndexError from seq 129 on. The bounds do not
    // show the index inside the table, so no size is accepted on their word: undecided.
    let p = load(&data_path("pt2/t5_buckets_unclamped.pt2")).unwrap();
    let r = check(&p, false).unwrap();
    let t = truth("t5_buckets_unclamped");
    let d = &r.dims[0];
    assert_eq!(d.answer.accepted.as_ref().unwrap().count, 0);
    assert_eq!(d.answer.undecided.as_ref().unwrap().count, d.claimed.count);
    assert!(
        t.runs.len() < d.claimed.count as usize,
        "some sizes really fail"
    );
}
