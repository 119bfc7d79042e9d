//! Reading the command line's inputs: files, `TORCH_TRACE` directories, standard input, and
//! `--example` values.

use super::error::{input, io, Failure};
use std::io::{IsTerminal, Read};
use std::path::PathBuf;

/// The text of `file` (`-` or nothing: standard input; a directory: every file a
/// `TORCH_TRACE=DIR` run wrote there, in name order). Invalid UTF-8 is replaced, with a warning.
pub fn read_input(file: Option<&PathBuf>) -> Result<String, Failure> {
    let read =
        |p: &PathBuf| std::fs::read(p).map_err(|e| io(format!("cannot read {}: {e}", p.display())));
    let mut buf = Vec::new();
    match file {
        Some(p) if p.is_dir() => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| io(format!("cannot read {}: {e}", p.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file())
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(io(format!(
                    "{} is an empty directory (expected the files TORCH_TRACE=DIR writes)",
                    p.display()
                )));
            }
            for f in files {
                buf.extend(read(&f)?);
                buf.push(b'\n');
            }
        }
        Some(p) if p.as_os_str() != "-" => buf = read(p)?,
        _ => {
            if std::io::stdin().is_terminal() {
                eprintln!(
                    "dimguard: reading the error message from standard input (end with Ctrl-D)"
                );
            }
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| io(format!("cannot read standard input: {e}")))?;
        }
    }
    // Pasted text may carry stray bytes; read what is valid and say so.
    match String::from_utf8(buf) {
        Ok(s) => Ok(s),
        Err(e) => {
            eprintln!(
                "dimguard: warning: the input is not valid UTF-8; invalid bytes were replaced"
            );
            Ok(String::from_utf8_lossy(e.as_bytes()).into_owned())
        }
    }
}

/// `--example N` / `--example NAME=N`.
pub fn parse_examples(args: &[String]) -> Result<Vec<(Option<String>, i128)>, Failure> {
    args.iter()
        .map(|a| {
            let (name, n) = match a.split_once('=') {
                Some((k, v)) => (Some(k.trim().to_string()), v),
                None => (None, a.as_str()),
            };
            n.trim().parse::<i128>().map(|v| (name, v)).map_err(|_| {
                input(format!(
                    "--example expects N or NAME=N with an integer N, got `{a}`"
                ))
            })
        })
        .collect()
}
