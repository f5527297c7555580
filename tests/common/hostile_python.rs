//! A generator of hostile Python trees: mutations of
//! the repository's own Python files, deep nesting, huge lines, odd
//! encodings and line ends, and entries that are not regular files
//! (FIFOs, directories named like modules, links that dangle, loop or
//! leave the tree).

use std::os::unix::fs::symlink;
use std::path::Path;

use fastrand::Rng;

/// Every `.py` file under the fixtures and the sample project: the seeds
/// that mutations start from.
pub fn corpus() -> Vec<Vec<u8>> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["tests/fixtures", "examples"] {
        files.extend(crate::common::python_files(&manifest.join(dir)));
    }
    files.sort();
    files.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// Writes one hostile tree under `root` (which exists and is empty).
pub fn tree(rng: &mut Rng, corpus: &[Vec<u8>], root: &Path, outside: &Path) {
    let names = [
        "a",
        "b",
        "c",
        "pkg/__init__",
        "pkg/mod",
        "pkg/sub/__init__",
        "pkg/sub/deep",
        "main",
    ];
    let files = rng.usize(2..=names.len());
    for name in names.iter().take(files) {
        let path = root.join(format!("{name}.py"));
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let text = source(rng, corpus, &names[..files]);
        let _ = std::fs::write(&path, text);
    }
    for _ in 0..rng.usize(0..3) {
        odd_entry(rng, root, outside);
    }
}

/// One module's bytes.
fn source(rng: &mut Rng, corpus: &[Vec<u8>], modules: &[&str]) -> Vec<u8> {
    let imports: String = (0..rng.usize(0..4))
        .map(|_| {
            let module = modules[rng.usize(0..modules.len())].replace('/', ".");
            let module = module.trim_end_matches(".__init__");
            match rng.u8(0..4) {
                0 => format!("import {module}\n"),
                1 => format!("from {module} import *\n"),
                2 => format!(
                    "from . import {}\n",
                    module.rsplit('.').next().unwrap_or("x")
                ),
                _ => format!("from {module} import f, C as D\n"),
            }
        })
        .collect();
    let mut text = imports.into_bytes();
    match rng.u8(0..13) {
        0..=4 => {
            let mut seed = corpus[rng.usize(0..corpus.len())].clone();
            for _ in 0..rng.usize(0..6) {
                mutate(rng, &mut seed, corpus);
            }
            text.extend(seed);
        }
        5 => text.extend(nested_brackets(rng.usize(10..20_000))),
        6 => text.extend(nested_blocks(rng.usize(10..400))),
        7 => {
            let names: Vec<String> = (0..rng.usize(100..20_000)).map(|i| format!("n{i}")).collect();
            text.extend(format!("from a import ({})\n", names.join(", ")).into_bytes());
        }
        8 => text.extend(format!("x = '{}'\n", "y".repeat(rng.usize(1_000..1_000_000))).into_bytes()),
        9 => text.extend(odd_encoding(rng)),
        11 => text.extend(deep_chain(rng)),
        10 => text.extend(b"class C(metaclass=M):\n    def f(self): return self.g().h().i()\nf = lambda: C().f()\n"),
        _ => text.extend(b"\r".repeat(rng.usize(1..30_000))),
    }
    text
}

fn mutate(rng: &mut Rng, text: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    if text.is_empty() {
        text.extend_from_slice(b"pass\n");
    }
    let at = rng.usize(0..text.len());
    let len = rng.usize(0..(text.len() - at).min(200) + 1);
    match rng.u8(0..6) {
        0 => text[at] = rng.u8(..),
        1 => {
            text.drain(at..at + len);
        }
        2 => {
            let copy: Vec<u8> = text[at..at + len].to_vec();
            text.splice(at..at, copy);
        }
        3 => {
            const PIECES: &[&[u8]] = &[
                b"(",
                b")",
                b"[",
                b"{",
                b":",
                b"\n    ",
                b"\t",
                b"\\",
                b"'''",
                b"\"",
                b"\xff\xfe",
                b"\x00",
                b"\r",
                b"import ",
                b"from . import *",
                b"lambda",
                b"async ",
                b"@",
            ];
            let piece = PIECES[rng.usize(0..PIECES.len())];
            text.splice(at..at, piece.iter().copied());
        }
        4 => {
            // A slice of another file spliced in.
            let other = &corpus[rng.usize(0..corpus.len())];
            if !other.is_empty() {
                let from = rng.usize(0..other.len());
                let to = (from + rng.usize(0..400)).min(other.len());
                text.splice(at..at, other[from..to].iter().copied());
            }
        }
        _ => text.truncate(at),
    }
}

fn nested_brackets(depth: usize) -> Vec<u8> {
    let mut text = b"x = ".to_vec();
    text.extend(std::iter::repeat_n(b'(', depth));
    text.push(b'1');
    text.extend(std::iter::repeat_n(b')', depth));
    text.push(b'\n');
    text
}

/// One expression of up to a million links of one shape: the chains that
/// once overflowed the stack or made the work quadratic.
fn deep_chain(rng: &mut Rng) -> Vec<u8> {
    // Log-uniform: as many short chains as long ones.
    let links = 10usize.pow(rng.u32(1..7)) * rng.usize(1..10) / 9 + 1;
    let (open, link, close): (&str, &str, &str) = match rng.u8(0..8) {
        0 => ("", ".b", ""),
        1 => ("", ".b()", ""),
        2 => ("", "[0]", ""),
        3 => ("", " + a", ""),
        4 => ("(", "", ")"),
        5 => ("-", "", ""),
        6 => ("lambda: ", "", ""),
        _ => ("a if b else ", "", ""),
    };
    let mut text = b"x = ".to_vec();
    text.extend(open.repeat(links).into_bytes());
    text.push(b'a');
    text.extend(link.repeat(links).into_bytes());
    text.extend(close.repeat(links).into_bytes());
    text.push(b'\n');
    text
}

fn nested_blocks(depth: usize) -> Vec<u8> {
    let mut text = Vec::new();
    for level in 0..depth {
        text.extend(b" ".repeat(level));
        text.extend(format!("def f{level}():\n").into_bytes());
    }
    text.extend(b" ".repeat(depth));
    text.extend_from_slice(b"return 1\n");
    text
}

fn odd_encoding(rng: &mut Rng) -> Vec<u8> {
    match rng.u8(0..6) {
        0 => b"\xef\xbb\xbfimport a\n".to_vec(),
        1 => {
            // UTF-16 LE with its BOM.
            let mut text = vec![0xff, 0xfe];
            for unit in "import a\nx = 1\n".encode_utf16() {
                text.extend(unit.to_le_bytes());
            }
            text
        }
        2 => b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n".to_vec(),
        3 => b"import a\x00\nx = 1\n".to_vec(),
        4 => b"import a\rimport b\r\nx = '\xc3\x28'\n".to_vec(),
        _ => b"# coding: nosuchcodec\nimport a\n".to_vec(),
    }
}

/// An entry that is not a plain module file.
fn odd_entry(rng: &mut Rng, root: &Path, outside: &Path) {
    let n = rng.u32(..);
    let _ = match rng.u8(0..7) {
        0 => std::fs::create_dir_all(root.join(format!("dir{n}.py"))),
        1 => symlink(
            root.join(format!("missing{n}.py")),
            root.join(format!("dangling{n}.py")),
        ),
        2 => symlink(
            root.join(format!("loop{n}.py")),
            root.join(format!("loop{n}.py")),
        ),
        3 => symlink(root, root.join(format!("pkgloop{n}"))),
        4 => symlink(outside, root.join(format!("outside{n}.py"))),
        5 => mkfifo(&root.join(format!("fifo{n}.py"))),
        _ => std::fs::write(
            root.join(format!("bin{n}.py")),
            (0..4096).map(|i| (i * 7 % 256) as u8).collect::<Vec<u8>>(),
        ),
    };
}

fn mkfifo(path: &Path) -> std::io::Result<()> {
    let status = std::process::Command::new("mkfifo").arg(path).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other("mkfifo failed"))
    }
}
