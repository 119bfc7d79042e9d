//! Every wrapper a paste meets (log prefixes of any logger and torch version, `[rank3]:`,
//! pytest's `E   `, diff `+`, `> ` quotes, Markdown fences and tables, backticks, ANSI colours,
//! HTML entities, CRLF, wrapping): the one list the tests that put texts through them share.
//! (Each test uses part of it.)
#![allow(dead_code)]

/// One wrapper of a paste (a function of the whole text).
pub type Wrap = (&'static str, fn(&str) -> String);

fn each(text: &str, f: impl Fn(usize, &str) -> String) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| f(i, l))
        .collect::<Vec<_>>()
        .join("\n")
}

pub const WRAPPERS: [Wrap; 17] = [
    ("glog", |t| {
        each(t, |i, l| {
            format!("I1123 07:53:01.{i:06} 6430 torch/fx/experimental/symbolic_shapes.py:6064] {l}")
        })
    }),
    ("glog cut before its date", |t| {
        each(t, |_, l| {
            format!("torch/fx/experimental/symbolic_shapes.py:5956] {l}")
        })
    }),
    ("logging", |t| {
        each(t, |_, l| {
            format!(
                "[2024-01-10 15:44:32,290] [4/0] torch.fx.experimental.symbolic_shapes: [INFO] {l}"
            )
        })
    }),
    ("torch 2.1 logging", |t| {
        each(t, |_, l| {
            format!(
                "[2023-07-19 04:14:11,688] torch.fx.experimental.symbolic_shapes: [INFO] 0.0: {l}"
            )
        })
    }),
    ("python logging", |t| {
        each(t, |_, l| {
            format!("INFO:torch.fx.experimental.symbolic_shapes:{l}")
        })
    }),
    ("rank", |t| each(t, |_, l| format!("[rank3]: {l}"))),
    ("pytest", |t| each(t, |_, l| format!("E   {l}"))),
    ("diff", |t| each(t, |_, l| format!("+{l}"))),
    ("quoted", |t| each(t, |_, l| format!("> {l}"))),
    ("fenced", |t| format!("```text\n{t}\n```")),
    ("table", |t| {
        format!(
            "| output |\n|---|\n{}",
            each(t, |_, l| format!("| `{}` |", l.replace('|', "\\|")))
        )
    }),
    ("ansi", |t| {
        each(t, |_, l| format!("\u{1b}[31m{l}\u{1b}[0m"))
    }),
    ("html", |t| {
        t.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;")
    }),
    ("crlf", |t| t.replace('\n', "\r\n")),
    ("wrapped at 60", |t| each(t, |_, l| wrap(l, 60))),
    ("wrapped at 100", |t| each(t, |_, l| wrap(l, 100))),
    ("backticks", |t| {
        each(t, |_, l| {
            if l.trim().is_empty() {
                l.to_string()
            } else {
                format!("`{l}`")
            }
        })
    }),
];

/// A line hard-wrapped at spaces to `width` columns, continuation lines indented by four spaces.
pub fn wrap(line: &str, width: usize) -> String {
    let mut out = String::new();
    let mut col = 0;
    for (i, word) in line.split(' ').enumerate() {
        if i > 0 {
            if col + 1 + word.len() > width && col > 4 {
                out.push_str("\n    ");
                col = 4;
            } else {
                out.push(' ');
                col += 1;
            }
        }
        out.push_str(word);
        col += word.len();
    }
    out
}
