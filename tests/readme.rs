//! The README's examples are the program's real output: every ```text
//! block that starts with `$ xfile ...` is run from the repository root and
//! its output must match the block line for line.

use std::process::Command;

/// (command line, expected output) of each example block.
fn examples(readme: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = readme;
    while let Some(start) = rest.find("```text\n$ xfile ") {
        let block = &rest[start + "```text\n$ ".len()..];
        let Some(end) = block.find("```") else { break };
        let (command, output) = block[..end].split_once('\n').unwrap_or((&block[..end], ""));
        found.push((command.to_string(), output.to_string()));
        rest = &block[end..];
    }
    found
}

#[test]
fn readme_examples_match_the_program() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let examples = examples(&readme);
    assert!(examples.len() >= 2, "no examples found");
    for (command, expected) in examples {
        let mut words = command.split_whitespace();
        assert_eq!(words.next(), Some("xfile"));
        let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
            .args(words)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(output.status.success(), "{command}: {output:?}");
        let actual = String::from_utf8(output.stdout).unwrap();
        assert_eq!(
            actual, expected,
            "README example `{command}` differs from the program's output"
        );
    }
}
