//! What the Read hook already gave one agent session: the definitions it
//! showed, each by a hash of the text shown, so that a later Read shows
//! only what is new to the session or changed since (a definition whose
//! text changed hashes differently and is shown again).
//!
//! Kept in a file per session in the private runtime directory: each hook
//! call is a process of its own, and the session ids come from the agent.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::rendezvous;

/// Hashes kept per session, the newest: an old definition pushed out is
/// merely shown again.
const KEPT: usize = 4096;
/// A session id longer than this is not one an agent gives.
const SESSION_ID_MAX: usize = 256;

pub(crate) struct Given {
    file: PathBuf,
    seen: Vec<String>,
}

impl Given {
    /// The record of session `id`, empty when it has none yet; `None` when
    /// the id is unusable or the runtime directory is not safe to use.
    pub(crate) fn load(id: &str) -> Option<Given> {
        if id.is_empty() || id.len() > SESSION_ID_MAX {
            return None;
        }
        let dir = rendezvous::private_dir().ok()?.join("given");
        rendezvous::ensure_private(&dir).ok()?;
        let file = dir.join(hex(&Sha256::digest(id.as_bytes())[..16]));
        let seen = std::fs::read_to_string(&file)
            .map(|text| text.lines().map(str::to_string).collect())
            .unwrap_or_default();
        Some(Given { file, seen })
    }

    /// `section` (a context section: header lines, then one block per
    /// definition, its first line unindented and located by `  # `) without
    /// the blocks given before, and a line naming them; `None` when no
    /// definition in it is new. Marks the new ones as given.
    pub(crate) fn strip(&mut self, section: &str) -> Option<String> {
        let mut kept: Vec<Vec<&str>> = Vec::new();
        let mut earlier: Vec<String> = Vec::new();
        let mut new = 0;
        // The heading over the definitions being read: a heading all of
        // whose definitions were given earlier goes with them.
        let mut heading: Option<Heading> = None;
        for block in blocks(section) {
            let Some(first) = block.first().filter(|l| is_definition(l)) else {
                close(&mut kept, heading.take());
                if block.first().is_some_and(|l| l.ends_with(':')) {
                    heading = Some(Heading {
                        at: kept.len(),
                        definitions: false,
                        kept: false,
                    });
                }
                kept.push(block);
                continue;
            };
            if let Some(heading) = &mut heading {
                heading.definitions = true;
            }
            let hash = hex(&Sha256::digest(block.join("\n").as_bytes())[..8]);
            if self.seen.contains(&hash) {
                earlier.push(name_of(first));
                continue;
            }
            self.seen.push(hash);
            new += 1;
            if let Some(heading) = &mut heading {
                heading.kept = true;
            }
            kept.push(block);
        }
        close(&mut kept, heading);
        if new == 0 {
            return None;
        }
        let mut kept: String = kept
            .iter()
            .flatten()
            .flat_map(|line| [*line, "\n"])
            .collect();
        if !earlier.is_empty() {
            kept.push_str(&format!(
                "Given earlier in this session, unchanged: {}.\n",
                earlier.join(", ")
            ));
        }
        Some(kept.trim_end().to_string())
    }

    /// Writes the record back (a new file renamed over the old, so a
    /// reader never sees half of one); failures leave it as it was.
    pub(crate) fn save(mut self) {
        if self.seen.len() > KEPT {
            self.seen.drain(..self.seen.len() - KEPT);
        }
        let temporary = self
            .file
            .with_extension(format!("tmp{}", std::process::id()));
        let mut text = self.seen.join("\n");
        text.push('\n');
        if std::fs::write(&temporary, text).is_ok()
            && std::fs::rename(&temporary, &self.file).is_err()
        {
            let _ = std::fs::remove_file(&temporary);
        }
    }
}

/// A heading of the section, by its place among the kept blocks, and
/// whether definitions followed it and whether one of those was kept.
struct Heading {
    at: usize,
    definitions: bool,
    kept: bool,
}

/// Drops a heading whose definitions were all given earlier.
fn close(kept: &mut Vec<Vec<&str>>, heading: Option<Heading>) {
    if let Some(heading) = heading
        && heading.definitions
        && !heading.kept
    {
        kept.remove(heading.at);
    }
}

/// The section's lines grouped: a definition's first line starts a group
/// that takes the indented lines after it; any other unindented line is a
/// group of its own.
fn blocks(section: &str) -> Vec<Vec<&str>> {
    let mut groups: Vec<Vec<&str>> = Vec::new();
    for line in section.lines() {
        let indented = line.starts_with(' ') || line.starts_with('\t');
        match groups.last_mut() {
            Some(group) if indented && group.first().is_some_and(|l| is_definition(l)) => {
                group.push(line);
            }
            _ => groups.push(vec![line]),
        }
    }
    groups
}

/// A definition's first line: unindented, with its location after `  # `
/// (a header) or as its last word (the minimal tier's `User class
/// app/models.py:15`).
fn is_definition(line: &str) -> bool {
    !line.starts_with(' ') && (line.contains("  # ") || minimal_location(line).is_some())
}

/// The `path:line` that ends a minimal-tier line, if it is one.
fn minimal_location(line: &str) -> Option<&str> {
    let (_, last) = line.trim_end().rsplit_once(' ')?;
    let (path, number) = last.rsplit_once(':')?;
    let is_python = path.ends_with(".py") || path.ends_with(".pyi");
    (is_python && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some(last)
}

/// What a definition's first line names, short: `class User`, `def retry`
/// (`User class` at the minimal tier).
fn name_of(line: &str) -> String {
    let head = match line.split_once("  # ") {
        Some((head, _)) => head,
        None => minimal_location(line)
            .and_then(|location| line.trim_end().strip_suffix(location))
            .unwrap_or(line),
    };
    let head = head.split(['(', ':', '=']).next().unwrap_or(head).trim();
    head.chars().take(60).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECTION: &str = "[Cross-File Context]\nDefinitions these lines use, most relevant first:\nclass User(Base)  # app/models.py:15-21\n    \"\"\"A chat user.\"\"\"\nclass Storage  # app/storage.py:6-16\n    def put(self, row)  # app/storage.py:12\nWarnings: 1 circular_import in these lines.";

    fn given() -> Given {
        Given {
            file: PathBuf::new(),
            seen: Vec::new(),
        }
    }

    #[test]
    fn a_definition_shown_once_is_named_the_second_time_and_a_changed_one_shown_again() {
        let mut given = given();
        assert_eq!(given.strip(SECTION).as_deref(), Some(SECTION));
        assert_eq!(given.strip(SECTION), None, "nothing new");
        let changed = SECTION.replace("def put(self, row)", "def put(self, row, at)");
        assert_eq!(
            given.strip(&changed).as_deref(),
            Some(
                "[Cross-File Context]\nDefinitions these lines use, most relevant first:\nclass Storage  # app/storage.py:6-16\n    def put(self, row, at)  # app/storage.py:12\nWarnings: 1 circular_import in these lines.\nGiven earlier in this session, unchanged: class User."
            )
        );
    }

    #[test]
    fn a_heading_whose_definitions_were_all_given_earlier_goes_too() {
        let mut given = given();
        let first = "[Cross-File Context]\nDefinitions these lines use, most relevant first:\nclass User(Base)  # app/models.py:15-21";
        assert_eq!(given.strip(first).as_deref(), Some(first));
        // A heading over lines that are no definitions stays.
        let second = "[Cross-File Context]\nDefinitions these lines use, most relevant first:\nclass User(Base)  # app/models.py:15-21\nGuessed by name only (the value's class is not known):\ndef is_secure(self)  # Request web/request.py:2-3\nAvailable in this package:\nviews.py: index, detail";
        assert_eq!(
            given.strip(second).as_deref(),
            Some(
                "[Cross-File Context]\nGuessed by name only (the value's class is not known):\ndef is_secure(self)  # Request web/request.py:2-3\nAvailable in this package:\nviews.py: index, detail\nGiven earlier in this session, unchanged: class User."
            )
        );
    }

    #[test]
    fn minimal_tier_lines_are_definitions_too() {
        let section = "[Cross-File Context]\nAlso used (name, kind, location):\nUser class app/models.py:15\n    User.save method app/models.py:20\nretry_with_backoff function app/utils/retry.py:7\nWarnings: 1 circular_import in these lines (get_warnings app/bot.py).";
        let mut given = given();
        assert_eq!(given.strip(section).as_deref(), Some(section));
        assert_eq!(given.strip(section), None, "nothing new");
        let more = section.replace(
            "retry_with_backoff function app/utils/retry.py:7",
            "retry_with_backoff function app/utils/retry.py:7\nStorage class app/storage.py:6",
        );
        assert_eq!(
            given.strip(&more).as_deref(),
            Some(
                "[Cross-File Context]\nAlso used (name, kind, location):\nStorage class app/storage.py:6\nWarnings: 1 circular_import in these lines (get_warnings app/bot.py).\nGiven earlier in this session, unchanged: User class, retry_with_backoff function."
            )
        );
    }
}
