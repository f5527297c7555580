//! `read_with_context`: a file's content (or a line range of it)
//! behind a `[Cross-File Context]` section with the definitions of other
//! project files that those lines use.
//!
//! The whole section, headings, notes and the closing "not shown" line
//! included, stays within `context_token_limit` tokens (cl100k_base). The
//! budget is spent in passes, each over the definitions in priority order
//! (`select`): base classes at the signature tier (a third of the budget at
//! most), then every definition at the minimal tier with the class members
//! the lines use (a used member is never hidden while anything ranked
//! lower is shown), then the signature tier, then the types depth-1
//! signatures mention (`import_depth` ≥ 2), then the sibling modules'
//! names when asked for, then the full tier and a class's other members.
//! What fits nowhere is named on one closing line. The rendered section is
//! counted once more at the end, and the last upgrades are undone while it
//! is over the limit, so the limit holds exactly.

mod available;
mod builtin_members;
mod defs;
mod render;
mod select;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::time::Instant;

use super::Service;
use super::cache::{Entry, Lookup};
use super::injections::{self, InjectionEvent};
use super::model::{Relationship, RelationshipType};
use super::ranking::Accesses;
use defs::Definitions;
use select::{Certainty, Lines, Member, Used};
use xfile_python::{Definition, DefinitionKind};
use xfile_workspace::PathError;

/// Tokens of `text` in the cl100k_base encoding (built once, on first use).
///
/// A line longer than [`LONG_LINE`] bytes is counted in pieces of
/// [`PIECE`] bytes: merging one long run without spaces (a minified literal, a
/// base64 blob) costs the encoder more than linear time, 2 s for one 4 MB
/// line. Pieces can only add tokens at their seams, so a budget stays
/// safe; text of shorter lines counts exactly as a whole.
pub fn count_tokens(text: &str) -> usize {
    let encoder = tiktoken_rs::cl100k_base_singleton();
    let count = |part: &str| encoder.encode_with_special_tokens(part).len();
    if text.len() <= LONG_LINE {
        return count(text);
    }
    let mut total = 0;
    // Where the run of short lines not yet counted starts.
    let mut run = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.len() > LONG_LINE {
            total += count(&text[run..at]);
            total += pieces(line, PIECE).map(count).sum::<usize>();
            run = at + line.len();
        }
        at += line.len();
    }
    total + count(&text[run..])
}

/// Lines up to this many bytes are tokenized whole.
const LONG_LINE: usize = 4_096;

/// A longer line is tokenized in pieces of this many bytes: the encoder's
/// work on one piece grows faster than its length.
const PIECE: usize = 256;

/// `text` cut into pieces of at most `size` bytes (at least one character
/// each), at character boundaries.
fn pieces(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, after) = rest.split_at(end);
        rest = after;
        Some(piece)
    })
}

/// How to read: all of a file or a line range, and how far to expand.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// First line to read (1-based); the file's start when absent.
    pub start_line: Option<u32>,
    /// Last line to read (inclusive); the file's end when absent.
    pub end_line: Option<u32>,
    /// How many hops of types to follow from the used definitions' own
    /// signatures; `import_depth` from the configuration when absent.
    pub import_depth: Option<u32>,
    /// Add the public names of the sibling modules.
    pub show_available: bool,
    /// Log the injected definitions (an agent's read); a person's read
    /// on the command line writes nothing.
    pub log: bool,
    /// How often the session read each file: the frequency boost of the
    /// used definitions' order.
    pub accesses: Accesses,
    /// A larger limit, in tokens, for naming what the lines use (the
    /// hook's `hook_token_limit`): every used definition and member is
    /// named within it, while signatures, docstrings and other members
    /// still stop at `context_token_limit`. None: one limit for all.
    pub names_limit: Option<u64>,
}

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("{0}")]
    Range(String),
    /// The file on disk is no longer the text that was indexed (written
    /// between the freshness check and the read): its lines would not be
    /// the ones the context describes.
    #[error("{0} changed on disk while it was read")]
    Changed(String),
}

impl ReadError {
    pub fn code(&self) -> &'static str {
        match self {
            ReadError::Path(error) => error.code(),
            ReadError::Range(_) => "invalid_parameter",
            ReadError::Changed(_) => "file_changed",
        }
    }
}

/// The deepest `import_depth` served: each hop adds types of types.
const MAX_DEPTH: u64 = 3;
/// Share of the budget base classes may take before anything else.
const BASE_SHARE: usize = 3;
/// Names spelled out on the closing "not shown" line.
const NAMED_LEFT_OUT: usize = 6;
/// Warnings inside shown definitions spelled out.
const INJECTED_WARNINGS: usize = 3;
/// Notes (deleted modules, files with syntax errors) spelled out.
const NOTES: usize = 3;

const HEADER: &str = "[Cross-File Context]\n";
const DEFINITIONS: &str = "Definitions these lines use, most relevant first:\n";
const ALSO_USED: &str = "Also used (name, kind, location):\n";
const MENTIONED: &str = "Types those signatures mention:\n";
const CONDITIONAL: &str = "Bound conditionally (a `try`/`except` or an `if` picks one when the program runs; the project's definitions of it):\n";
const GUESSED: &str = "Guessed by name only (the value's class is not known; the project's only definitions of it, overrides aside):\n";
const AVAILABLE: &str = "Available in this package:\n";
const SEPARATOR: &str = "\n---\n\n";

/// The heading a candidate goes under at `tier`.
fn heading(candidate: &Candidate, tier: Tier) -> &'static str {
    match (candidate.certainty, candidate.depth, tier) {
        (Certainty::Guessed, ..) => GUESSED,
        (Certainty::Conditional, ..) => CONDITIONAL,
        (_, 1, Tier::Minimal) => ALSO_USED,
        (_, 1, _) => DEFINITIONS,
        _ => MENTIONED,
    }
}

pub fn read_with_context(
    service: &Service,
    input: &str,
    options: &ReadOptions,
) -> Result<String, ReadError> {
    let path = service.resolve_file(input)?;
    let engine = service.engine();
    let content = engine
        .text(&path)
        .ok_or_else(|| ReadError::Changed(path.clone()))?;
    let content = &*content;
    let (lines, shown) = line_range(&path, content, options)?;
    let answer_limit = service.answer_token_limit();
    // The context takes at most half the answer, so the lines read fit too.
    let limit = usize::try_from(service.config().context_token_limit)
        .unwrap_or(usize::MAX)
        .min(answer_limit / 2);
    let names_limit = options
        .names_limit
        .map_or(limit, |names| {
            usize::try_from(names)
                .unwrap_or(usize::MAX)
                .min(answer_limit / 2)
        })
        .max(limit);
    let injecting = service.config().enable_context_injection;
    // The file's lines get what the answer budget leaves after the context.
    let content_budget = answer_limit
        .saturating_sub(if injecting { names_limit } else { 0 })
        .saturating_sub(CONTENT_HEADINGS)
        .max(CONTENT_HEADINGS);
    let (lines, cut) = fit_lines(content, lines, content_budget);
    let total = || content.lines().count().max(1);
    let heading = match (shown, cut) {
        (None, false) => "[File Content]\n".to_string(),
        (shown, true) => format!(
            "[File Content: lines {}-{} of {}; the answer budget ends here, read on with start_line={}]\n",
            lines.start,
            lines.end,
            shown.unwrap_or_else(total),
            lines.end + 1
        ),
        (Some(total), false) => format!(
            "[File Content: lines {}-{} of {total}]\n",
            lines.start, lines.end
        ),
    };
    if !injecting {
        // Without context the text stays bare, as a plain read gives it,
        // unless the budget cut it.
        let heading = if cut { heading.as_str() } else { "" };
        let text = bounded_text(content, lines, content_budget);
        return Ok(format!("{heading}{text}"));
    }
    let depth = options
        .import_depth
        .map_or(service.config().import_depth, u64::from)
        .clamp(1, MAX_DEPTH);
    let depth = u32::try_from(depth).unwrap_or(1);
    let mut context = Context::new(service, &path, lines, names_limit, limit, &options.accesses);
    context.allocate(depth, options.show_available);
    let (mut out, events) = context.render();
    if options.log
        && service.config().enable_injection_logging
        && let Err(error) = injections::append(service.root(), &events)
    {
        // Logging is best effort: the agent still gets its context.
        tracing::warn!("cannot write the injection log: {error}");
    }
    out.push_str(&heading);
    out.push_str(&bounded_text(content, lines, content_budget));
    Ok(out)
}

/// The text of `lines`, which [`fit_lines`] fitted to `budget` unless a
/// single line is longer than the whole budget (minified code): that line
/// is cut at the budget and says so.
fn bounded_text(content: &str, lines: Lines, budget: usize) -> String {
    let text = slice_lines(content, lines);
    let kept = if lines.start == lines.end {
        super::text::prefix_within(text, budget)
    } else {
        text
    };
    if kept.len() == text.len() {
        return text.to_string();
    }
    format!(
        "{kept}\n[line {} is cut after {} of its {} bytes by the answer budget]\n",
        lines.start,
        kept.len(),
        text.len()
    )
}

/// Tokens kept for the headings around the file's lines.
const CONTENT_HEADINGS: usize = 60;

/// The first of `lines` whose text fits `budget` tokens (at least one
/// line), and whether that cut any.
fn fit_lines(content: &str, lines: Lines, budget: usize) -> (Lines, bool) {
    let text = slice_lines(content, lines);
    let kept = super::text::lines_within(text, budget);
    if kept.len() == text.len() {
        return (lines, false);
    }
    let count = u32::try_from(kept.split_inclusive('\n').count()).unwrap_or(u32::MAX);
    let end = lines.start + count.max(1) - 1;
    let fitted = Lines {
        end,
        whole: false,
        ..lines
    };
    (fitted, end < lines.end)
}

/// The lines to read and, for a partial read, the file's line count.
fn line_range(
    path: &str,
    content: &str,
    options: &ReadOptions,
) -> Result<(Lines, Option<usize>), ReadError> {
    let total = content.lines().count().max(1);
    let last = u32::try_from(total).unwrap_or(u32::MAX);
    if options.start_line.is_none() && options.end_line.is_none() {
        let whole = Lines {
            start: 1,
            end: last,
            whole: true,
        };
        return Ok((whole, None));
    }
    let start = options.start_line.unwrap_or(1);
    let end = options.end_line.unwrap_or(last).min(last);
    if start == 0 || start > last || start > end {
        return Err(ReadError::Range(format!(
            "lines {start}-{} are not in {path}, which has {total} lines; give 1 <= start_line <= end_line <= {total}",
            options
                .end_line
                .map_or("end".to_string(), |e| e.to_string())
        )));
    }
    let whole = start == 1 && end == last;
    Ok((Lines { start, end, whole }, Some(total)))
}

/// The text of `lines`: whole lines of `content`, without copying.
fn slice_lines(content: &str, lines: Lines) -> &str {
    if lines.whole {
        return content;
    }
    let mut offsets =
        std::iter::once(0).chain(content.split_inclusive('\n').scan(0, |at, line| {
            *at += line.len();
            Some(*at)
        }));
    let start = offsets
        .nth(lines.start as usize - 1)
        .unwrap_or(content.len());
    let end = offsets
        .nth((lines.end - lines.start) as usize)
        .unwrap_or(content.len());
    &content[start..end.max(start)]
}

/// Text and its token count.
#[derive(Clone, Debug)]
struct Piece {
    text: String,
    tokens: usize,
}

impl Piece {
    fn new(text: String) -> Self {
        let tokens = count_tokens(&text);
        Piece { text, tokens }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    Omitted,
    Minimal,
    Signature,
    Full,
}

/// One definition on its way into the section, rendered at every tier.
struct Candidate<'s> {
    file: String,
    definition: &'s Definition,
    /// 1 for what the lines use, 2 and up for types signatures mention.
    depth: u32,
    base: bool,
    /// Whether resolution found it ([`select::Certainty`]).
    certainty: Certainty,
    tier: Tier,
    minimal: Piece,
    /// The header and the used members' lines.
    signature: Vec<Piece>,
    /// The used members' lines at the minimal tier, `Class.name kind
    /// path:line`, one for each of `signature[1..]`.
    compact: Vec<Piece>,
    /// How many used members' lines are shown (the first ones), at the
    /// minimal tier too.
    used_shown: usize,
    /// The full tier's header (with the line range) and docstring,
    /// rendered when the tier is tried.
    full: Option<(Piece, Option<Piece>)>,
    /// A class's other members, shown at the full tier as budget allows.
    others: Vec<&'s Definition>,
    /// The lines of the first of `others`, rendered as they are shown.
    shown_others: Vec<Piece>,
    /// Members neither used nor shown: the `... N more` line.
    more: Option<Piece>,
    /// Warnings inside the definition: `type at path:line`.
    warnings: Vec<String>,
    cache_hit: bool,
    age_seconds: f64,
}

impl Candidate<'_> {
    /// The pieces shown at `tier`, in order (without the `...` line).
    fn pieces(&self, tier: Tier) -> Vec<&Piece> {
        let members = self.signature[1..=self.used_shown].iter();
        match tier {
            Tier::Omitted => Vec::new(),
            Tier::Minimal => std::iter::once(&self.minimal)
                .chain(&self.compact[..self.used_shown])
                .collect(),
            Tier::Signature => std::iter::once(&self.signature[0])
                .chain(members)
                .chain(&self.shown_others)
                .collect(),
            Tier::Full => match &self.full {
                Some((header, doc)) => std::iter::once(header)
                    .chain(doc)
                    .chain(members)
                    .chain(&self.shown_others)
                    .collect(),
                None => Vec::new(),
            },
        }
    }

    fn cost(&self, tier: Tier) -> usize {
        let more = match (tier >= Tier::Signature, self.hidden_members(), &self.more) {
            (true, Some(_), Some(more)) => more.tokens,
            _ => 0,
        };
        self.pieces(tier).iter().map(|p| p.tokens).sum::<usize>() + more
    }

    /// How many of a class's members are not shown, if any.
    fn hidden_members(&self) -> Option<usize> {
        let used = self.signature.len() - 1 - self.used_shown;
        let hidden = used + self.others.len() - self.shown_others.len();
        (hidden > 0).then_some(hidden)
    }

    fn text(&self) -> String {
        let mut text: String = self
            .pieces(self.tier)
            .iter()
            .map(|p| p.text.as_str())
            .collect();
        if self.tier >= Tier::Signature
            && let Some(hidden) = self.hidden_members()
        {
            text.push_str(&render::more_members(hidden));
        }
        text
    }
}

/// An allocation step, so that the last ones can be undone.
enum Step {
    /// The candidate's tier and shown used members before.
    Tier(usize, Tier, usize),
    Used(usize),
    Other(usize),
    Available,
}

struct Context<'s> {
    service: &'s Service,
    definitions: Definitions<'s>,
    path: &'s str,
    lines: Lines,
    /// The hard limit: naming what the lines use stays within it.
    limit: usize,
    /// Where the rest stops (signatures, docstrings, other members): the
    /// limit, or a smaller one when names have more room
    /// ([`ReadOptions::names_limit`]); never above `limit`.
    rest: usize,
    /// The naming pass is under way: it may spend up to `limit`.
    naming: bool,
    spent: usize,
    candidates: Vec<Candidate<'s>>,
    relationships: Vec<Relationship>,
    fixed: Vec<String>,
    available: Vec<Piece>,
    available_shown: usize,
    steps: Vec<Step>,
    headings: HashSet<&'static str>,
    /// Tokens of the warnings line as it stands.
    warnings_tokens: usize,
    /// Tokens of the closing line without names, with everything left out.
    left_out_tokens: usize,
}

impl<'s> Context<'s> {
    fn new(
        service: &'s Service,
        path: &'s str,
        lines: Lines,
        limit: usize,
        rest: usize,
        accesses: &Accesses,
    ) -> Self {
        let definitions = Definitions::new(service.engine());
        let (used, relationships) =
            select::used_definitions(service, &definitions, path, lines, accesses);
        let mut context = Context {
            service,
            definitions,
            path,
            lines,
            limit,
            rest: rest.min(limit),
            naming: false,
            spent: 0,
            candidates: Vec::new(),
            relationships,
            fixed: Vec::new(),
            available: Vec::new(),
            available_shown: 0,
            steps: Vec::new(),
            headings: HashSet::new(),
            warnings_tokens: 0,
            left_out_tokens: 0,
        };
        for u in &used {
            if let Some(candidate) = context.candidate(u, 1) {
                context.candidates.push(candidate);
            }
        }
        context.fixed = context.notes();
        context.warnings_tokens = count_tokens(&context.warnings_line(None));
        context.left_out_tokens = count_tokens(&context.left_out_line(0));
        context
    }

    /// The definition `used` names, rendered at every tier.
    fn candidate(&self, used: &Used, depth: u32) -> Option<Candidate<'s>> {
        let definition = self.definitions.get(&used.file, &used.symbol)?;
        let file = used.file.as_str();
        // A member on its own says which class it belongs to.
        let owner = used.symbol.rsplit_once('.').map(|(owner, _)| owner);
        let (header, cache_hit, age_seconds) =
            self.piece(file, &format!("{}#signature", used.symbol), || {
                render::header(file, definition, "", owner, false)
            });
        let mut signature = vec![header];
        let mut compact = Vec::new();
        let mut listed: HashSet<&str> = HashSet::new();
        for member in &used.members {
            if let Some((piece, short)) = self.member_pieces(&used.symbol, member) {
                listed.insert(member.qualname.as_str());
                signature.push(piece);
                compact.push(short);
            }
        }
        let others = if definition.kind == DefinitionKind::Class {
            self.other_members(file, &used.symbol, &listed)
        } else {
            Vec::new()
        };
        let first = definition
            .start_line
            .saturating_sub(u32::try_from(definition.decorators.len()).unwrap_or(0));
        let warnings = self
            .service
            .warnings_of(file)
            .iter()
            .filter(|w| (first..=definition.end_line).contains(&w.line))
            .map(|w| format!("{} at {}:{}", w.warning_type.as_str(), w.file, w.line))
            .collect();
        let more = (signature.len() > 1 || !others.is_empty()).then(|| {
            self.piece(file, &format!("{}#more", used.symbol), || {
                render::more_members(signature.len() - 1 + others.len())
            })
            .0
        });
        Some(Candidate {
            file: used.file.clone(),
            definition,
            depth,
            base: used.base,
            certainty: used.certainty,
            tier: Tier::Omitted,
            minimal: self
                .piece(file, &format!("{}#minimal", used.symbol), || {
                    render::minimal(file, definition)
                })
                .0,
            full: None,
            more,
            compact,
            used_shown: 0,
            others,
            shown_others: Vec::new(),
            warnings,
            signature,
            cache_hit,
            age_seconds,
        })
    }

    /// The full tier's header, with the line range and, for a definition
    /// many files use, how many, and the docstring line.
    fn full_pieces(&self, c: &Candidate) -> (Piece, Option<Piece>) {
        let (file, definition) = (c.file.as_str(), c.definition);
        let symbol = definition.qualname.as_str();
        let owner = symbol.rsplit_once('.').map(|(owner, _)| owner);
        let threshold =
            usize::try_from(self.service.config().function_usage_warning_threshold).unwrap_or(0);
        let users = self.service.usage_count(file, symbol);
        let header = self
            .piece(file, &format!("{symbol}#full"), || {
                let mut header = render::header(file, definition, "", owner, true);
                if users >= threshold {
                    header.pop();
                    let _ = writeln!(header, ", used in {users} files");
                }
                header
            })
            .0;
        let doc = render::doc(definition, "")
            .map(|doc| self.piece(file, &format!("{symbol}#doc"), || doc).0);
        (header, doc)
    }

    /// The lines of a used member under its class: its header (labelled
    /// with the class that defines it when that is a base) and its
    /// minimal line (`Class.name kind path:line`).
    fn member_pieces(&self, class: &str, member: &Member) -> Option<(Piece, Piece)> {
        let definition = self.definitions.get(&member.file, &member.qualname)?;
        let owner = member
            .qualname
            .rsplit_once('.')
            .map(|(owner, _)| owner)
            .filter(|owner| *owner != class);
        let key = format!("{}#member:{}", member.qualname, owner.unwrap_or(""));
        let header = self.piece(&member.file, &key, || {
            render::header(&member.file, definition, "    ", owner, false)
        });
        let key = format!("{}#member-minimal", member.qualname);
        let minimal = self.piece(&member.file, &key, || {
            format!("    {}", render::minimal(&member.file, definition))
        });
        Some((header.0, minimal.0))
    }

    /// A class's own public members (and `__init__`) not already listed,
    /// in source order, `__init__` first.
    fn other_members(
        &self,
        file: &str,
        class: &str,
        listed: &HashSet<&str>,
    ) -> Vec<&'s Definition> {
        let Some(facts) = self.service.engine().facts(file) else {
            return Vec::new();
        };
        let prefix = format!("{class}.");
        let mut members: Vec<&'s Definition> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for definition in &facts.definitions {
            let Some(name) = definition.qualname.strip_prefix(&prefix) else {
                continue;
            };
            let public = !name.starts_with('_') || name == "__init__";
            if public
                && !name.contains('.')
                && !listed.contains(definition.qualname.as_str())
                && seen.insert(definition.qualname.as_str())
            {
                members.push(definition);
            }
        }
        members.sort_by_key(|d| !d.qualname.ends_with(".__init__"));
        members
    }

    /// A rendered piece from the working memory cache when current for
    /// the file's revision, rendered (and cached) otherwise; with whether
    /// it was a hit and the entry's age.
    fn piece(&self, file: &str, key: &str, render: impl FnOnce() -> String) -> (Piece, bool, f64) {
        let Some(revision) = self.service.engine().revision(file) else {
            return (Piece::new(render()), false, 0.0);
        };
        let mut cache = self.service.snippet_cache();
        let found = if self.service.ahead {
            cache.get_uncounted(file, key, revision)
        } else {
            cache.get(file, key, revision)
        };
        match found {
            Lookup::Hit(entry) => (
                Piece {
                    text: entry.text,
                    tokens: entry.tokens,
                },
                true,
                entry.created.elapsed().as_secs_f64(),
            ),
            Lookup::Miss => {
                let piece = Piece::new(render());
                let entry = Entry {
                    text: piece.text.clone(),
                    tokens: piece.tokens,
                    revision,
                    created: Instant::now(),
                };
                cache.insert(file, key, entry);
                (piece, false, 0.0)
            }
        }
    }

    /// Notes on what the lines import that is deleted or broken, and
    /// the warnings of the lines and of the shown definitions, by type.
    fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = Vec::new();
        for r in &self.relationships {
            let note = if let Some(module) = r
                .target_file
                .strip_prefix("<unresolved:")
                .and_then(|m| m.strip_suffix('>'))
                .filter(|_| r.relationship_type == RelationshipType::Import)
            {
                Some(match self.service.deleted_module(module) {
                    Some((path, when)) => format!(
                        "Note: line {} imports {module} from {path}, which was deleted at {}.\n",
                        r.line_number,
                        humantime::format_rfc3339_seconds(when)
                    ),
                    None => format!(
                        "Note: line {} imports {module}, which is not in the project (deleted, moved or not created yet).\n",
                        r.line_number
                    ),
                })
            } else {
                self.service
                    .engine()
                    .facts(&r.target_file)
                    .and_then(|facts| facts.parse_error.as_ref())
                    .map(|error| {
                        format!(
                            "Note: {} has a syntax error at line {}; its definitions are not available.\n",
                            r.target_file, error.line
                        )
                    })
            };
            if let Some(note) = note
                && !notes.contains(&note)
            {
                notes.push(note);
            }
        }
        if notes.len() > NOTES {
            let more = notes.len() - NOTES;
            notes.truncate(NOTES);
            notes.push(format!(
                "Note: {more} more such notes; get_dependencies {} shows every import.\n",
                self.path
            ));
        }
        notes
    }

    /// Whether `extra` tokens fit under the cap of the pass under way.
    fn fits(&self, extra: usize) -> bool {
        let cap = match self.naming {
            true => self.limit,
            false => self.rest,
        };
        self.spent + extra <= cap
    }

    fn set_tier(&mut self, index: usize, tier: Tier) -> bool {
        if tier == Tier::Full && self.candidates[index].full.is_none() {
            let full = self.full_pieces(&self.candidates[index]);
            self.candidates[index].full = Some(full);
        }
        let candidate = &self.candidates[index];
        if candidate.tier >= tier {
            return false;
        }
        let heading = heading(candidate, tier);
        let mut extra = 0;
        if !self.headings.contains(heading) {
            extra += count_tokens(heading);
        }
        // Showing a definition with warnings lengthens the summary line.
        let mut warnings = None;
        if candidate.tier == Tier::Omitted && !candidate.warnings.is_empty() {
            let tokens = count_tokens(&self.warnings_line(Some(index)));
            extra += tokens.saturating_sub(self.warnings_tokens);
            warnings = Some(tokens);
        }
        // A class whose used members do not all fit shows the first ones
        // (the rest go in later if there is room), and never fewer than
        // its minimal tier listed.
        let before = candidate.cost(candidate.tier);
        let all = candidate.signature.len() - 1;
        let counts: Vec<usize> = if tier == Tier::Signature {
            // At least one member: a bare header says little more than the
            // minimal line.
            (candidate.used_shown.max(all.min(1))..=all).rev().collect()
        } else {
            vec![candidate.used_shown]
        };
        let previous = (candidate.tier, candidate.used_shown);
        for used in counts {
            self.candidates[index].used_shown = used;
            let delta = self.candidates[index].cost(tier).saturating_sub(before) + extra;
            if self.fits(delta) {
                if let Some(tokens) = warnings {
                    self.warnings_tokens = tokens;
                }
                self.steps.push(Step::Tier(index, previous.0, previous.1));
                self.spent += delta;
                self.headings.insert(heading);
                self.candidates[index].tier = tier;
                return true;
            }
        }
        self.candidates[index].used_shown = previous.1;
        false
    }

    fn allocate(&mut self, depth: u32, show_available: bool) {
        // The section's frame: header, notes, warnings and the closing
        // line without names (names go in as the rest of the budget allows).
        let frame = count_tokens(HEADER)
            + count_tokens(SEPARATOR)
            + self.fixed.iter().map(|n| count_tokens(n)).sum::<usize>()
            + self.warnings_tokens
            + self.left_out_tokens;
        self.spent = frame;
        if !self.fits(0) {
            return;
        }
        let first = self.candidates.len();
        let base_budget = self.rest / BASE_SHARE;
        for i in 0..first {
            let candidate = &mut self.candidates[i];
            if !candidate.base {
                continue;
            }
            // With every used member.
            let all = candidate.signature.len() - 1;
            let shown = std::mem::replace(&mut candidate.used_shown, all);
            let cost = candidate.cost(Tier::Signature);
            candidate.used_shown = shown;
            if self.spent + cost <= base_budget {
                self.set_tier(i, Tier::Signature);
            }
        }
        // Every definition by name, each with the members the lines use
        // (compactly, at this tier) before anything ranked lower: a used
        // member is never hidden while less is shown.
        self.naming = true;
        for i in 0..first {
            self.set_tier(i, Tier::Minimal);
            if self.candidates[i].tier > Tier::Omitted && !self.show_used(i) {
                break;
            }
        }
        self.naming = false;
        for i in 0..first {
            self.set_tier(i, Tier::Signature);
        }
        for i in 0..self.candidates.len() {
            if self.candidates[i].tier > Tier::Omitted && !self.show_used(i) {
                break;
            }
        }
        self.expand(depth);
        for i in first..self.candidates.len() {
            self.set_tier(i, Tier::Signature);
        }
        if show_available {
            self.available = available::sibling_lines(self.service, self.path)
                .into_iter()
                .map(Piece::new)
                .collect();
            let heading = count_tokens(AVAILABLE);
            for i in 0..self.available.len() {
                let cost = self.available[i].tokens + if i == 0 { heading } else { 0 };
                if !self.fits(cost) {
                    break;
                }
                self.spent += cost;
                self.available_shown += 1;
                self.steps.push(Step::Available);
            }
        }
        for i in 0..first {
            if self.candidates[i].tier == Tier::Signature {
                self.set_tier(i, Tier::Full);
            }
        }
        // A class's other members: the full tier's, then the deeper types'
        // skeletons. Each line is rendered when it is tried.
        for i in 0..self.candidates.len() {
            loop {
                let c = &self.candidates[i];
                let open = c.tier == Tier::Full || (c.depth > 1 && c.tier == Tier::Signature);
                let Some(&member) = c.others.get(c.shown_others.len()) else {
                    break;
                };
                if !open || c.used_shown + 1 < c.signature.len() {
                    break;
                }
                let file = c.file.clone();
                let key = format!("{}#member:", member.qualname);
                let (piece, ..) = self.piece(&file, &key, || {
                    render::header(&file, member, "    ", None, false)
                });
                let tier = self.candidates[i].tier;
                let before = self.candidates[i].cost(tier);
                self.candidates[i].shown_others.push(piece);
                let delta = self.candidates[i].cost(tier).saturating_sub(before);
                if !self.fits(delta) {
                    self.candidates[i].shown_others.pop();
                    break;
                }
                self.spent += delta;
                self.steps.push(Step::Other(i));
            }
        }
    }

    /// Shows the used members of candidate `i` not shown yet, at its
    /// tier, first ones first; whether they all fit.
    fn show_used(&mut self, i: usize) -> bool {
        while self.candidates[i].used_shown + 1 < self.candidates[i].signature.len() {
            let tier = self.candidates[i].tier;
            let before = self.candidates[i].cost(tier);
            self.candidates[i].used_shown += 1;
            let delta = self.candidates[i].cost(tier).saturating_sub(before);
            if !self.fits(delta) {
                self.candidates[i].used_shown -= 1;
                return false;
            }
            self.spent += delta;
            self.steps.push(Step::Used(i));
        }
        true
    }

    /// Adds, up to `depth` hops, the classes the shown signatures mention
    /// (`address: Address`), each once: a type already in the section is
    /// not added again, so cycles end.
    fn expand(&mut self, depth: u32) {
        let mut seen: HashSet<(String, String)> = self
            .candidates
            .iter()
            .map(|c| (c.file.clone(), c.definition.qualname.to_string()))
            .collect();
        let mut frontier: Vec<usize> = (0..self.candidates.len())
            .filter(|&i| self.candidates[i].tier >= Tier::Signature)
            .collect();
        for hop in 2..=depth {
            let mut next = Vec::new();
            for index in frontier {
                let candidate = &self.candidates[index];
                let texts: Vec<String> = candidate
                    .signature
                    .iter()
                    .map(|p| p.text.clone())
                    .chain(candidate.others.iter().map(|d| d.signature.to_string()))
                    .collect();
                let file = candidate.file.clone();
                for (type_file, class) in
                    mentioned_classes(self.service, &self.definitions, &file, &texts)
                {
                    if !seen.insert((type_file.clone(), class.clone())) {
                        continue;
                    }
                    let used = Used {
                        uses: 0,
                        ..Used::new(
                            type_file,
                            class,
                            0,
                            RelationshipType::Import,
                            Certainty::Certain,
                        )
                    };
                    if let Some(candidate) = self.candidate(&used, hop) {
                        next.push(self.candidates.len());
                        self.candidates.push(candidate);
                    }
                }
            }
            frontier = next;
        }
    }

    /// The warnings summary: the read lines' by type, the shown
    /// definitions' (and `extra`'s, about to be shown) by place.
    fn warnings_line(&self, extra: Option<usize>) -> String {
        let mut own: BTreeMap<&'static str, usize> = BTreeMap::new();
        for w in self
            .service
            .warnings_of(self.path)
            .iter()
            .filter(|w| self.lines.contains(w.line))
        {
            *own.entry(w.warning_type.as_str()).or_default() += 1;
        }
        // Warnings inside the shown definitions (decorators included), by
        // where they are: those files are not the one read.
        let mut injected: Vec<String> = self
            .candidates
            .iter()
            .enumerate()
            .filter(|(i, c)| c.tier > Tier::Omitted || Some(*i) == extra)
            .flat_map(|(_, c)| c.warnings.iter().cloned())
            .collect();
        injected.dedup();
        let mut parts = Vec::new();
        if !own.is_empty() {
            let list: Vec<String> = own.iter().map(|(kind, n)| format!("{n} {kind}")).collect();
            parts.push(format!(
                "{} in these lines (get_warnings {})",
                list.join(", "),
                self.path
            ));
        }
        if !injected.is_empty() {
            let more = injected.len().saturating_sub(INJECTED_WARNINGS);
            injected.truncate(INJECTED_WARNINGS);
            if more > 0 {
                injected.push(format!("+{more} more"));
            }
            parts.push(format!("{} in the definitions shown", injected.join(", ")));
        }
        if parts.is_empty() {
            return String::new();
        }
        format!("Warnings: {}.\n", parts.join("; "))
    }

    /// The closing line naming what did not fit, with as many names (a
    /// few at most) as keep the whole line within `budget` tokens.
    fn left_out_line(&self, budget: usize) -> String {
        let left: Vec<&Candidate> = self
            .candidates
            .iter()
            // Only certain definitions are ones `get_dependencies` lists.
            .filter(|c| {
                c.depth == 1 && c.certainty == Certainty::Certain && c.tier == Tier::Omitted
            })
            .collect();
        if left.is_empty() {
            return String::new();
        }
        let count = match left.len() {
            1 => "1 definition".to_string(),
            n => format!("{n} definitions"),
        };
        let line = |names: &[&str]| {
            let named = match (names.len(), left.len() - names.len()) {
                (0, _) => String::new(),
                (_, 0) => format!(" ({})", names.join(", ")),
                (_, more) => format!(" ({}, +{more} more)", names.join(", ")),
            };
            format!(
                "Not shown for the {}-token budget: {count}{named}; get_dependencies {} lists them.\n",
                self.limit, self.path
            )
        };
        let mut best = line(&[]);
        let mut names = Vec::new();
        for c in left.iter().take(NAMED_LEFT_OUT) {
            names.push(c.definition.qualname.as_str());
            let longer = line(&names);
            if count_tokens(&longer) > budget {
                break;
            }
            best = longer;
        }
        best
    }

    /// The section, with as many left-out names as the budget leaves room
    /// for.
    fn compose(&self) -> String {
        let names_budget = self.left_out_tokens + self.limit.saturating_sub(self.spent);
        let mut out = String::from(HEADER);
        for section in [DEFINITIONS, ALSO_USED, MENTIONED, CONDITIONAL, GUESSED] {
            let mut shown = self
                .candidates
                .iter()
                .filter(|c| c.tier > Tier::Omitted && heading(c, c.tier) == section)
                .peekable();
            if shown.peek().is_some() {
                out.push_str(section);
            }
            for c in shown {
                out.push_str(&c.text());
            }
        }
        if self.available_shown > 0 {
            out.push_str(AVAILABLE);
            for piece in &self.available[..self.available_shown] {
                out.push_str(&piece.text);
            }
        }
        for note in &self.fixed {
            out.push_str(note);
        }
        out.push_str(&self.warnings_line(None));
        out.push_str(&self.left_out_line(names_budget));
        out.push_str(SEPARATOR);
        out
    }

    /// The section, held to the limit, and one injection event per shown
    /// definition.
    fn render(mut self) -> (String, Vec<InjectionEvent>) {
        let mut section = self.compose();
        // `spent` bounds the section's tokens from above: every piece ends
        // a line and cl100k_base splits text at line ends the same way
        // whatever precedes them (only blank lines merge, into fewer
        // tokens). So the exact count is needed only when the frame alone
        // is over the limit; debug builds check the bound every time.
        debug_assert!(
            self.spent > self.limit || count_tokens(&section) <= self.limit,
            "estimate {} under the count {}",
            self.spent,
            count_tokens(&section)
        );
        while self.spent > self.limit && count_tokens(&section) > self.limit {
            match self.steps.pop() {
                Some(Step::Tier(i, tier, used)) => {
                    self.candidates[i].tier = tier;
                    self.candidates[i].used_shown = used;
                }
                Some(Step::Used(i)) => self.candidates[i].used_shown -= 1,
                Some(Step::Other(i)) => {
                    self.candidates[i].shown_others.pop();
                }
                Some(Step::Available) => self.available_shown -= 1,
                None => return (String::new(), Vec::new()),
            }
            section = self.compose();
        }
        let events = self
            .candidates
            .iter()
            .filter(|c| c.tier > Tier::Omitted)
            .map(|c| self.event(c))
            .collect();
        (section, events)
    }

    fn event(&self, c: &Candidate) -> InjectionEvent {
        let text = c.text();
        InjectionEvent {
            timestamp: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            event_type: "context_injection".into(),
            trigger: "agent_read_file".into(),
            trigger_file: self.path.to_string(),
            source_file: c.file.clone(),
            symbol: c.definition.qualname.to_string(),
            lines: format!("{}-{}", c.definition.start_line, c.definition.end_line),
            snippet: text.trim_end().to_string(),
            cache_hit: c.cache_hit,
            cache_age_seconds: c.age_seconds,
            token_count: c.cost(c.tier),
        }
    }
}

/// The classes the signature lines of a definition of `file` name: its
/// own top-level classes and the classes it imports, by the names used.
fn mentioned_classes(
    service: &Service,
    definitions: &Definitions,
    file: &str,
    texts: &[String],
) -> Vec<(String, String)> {
    let is_class = |file: &str, name: &str| {
        definitions
            .get(file, name)
            .is_some_and(|d| d.kind == DefinitionKind::Class)
    };
    let imported = service.engine().imported_names(file);
    let mut found = Vec::new();
    for text in texts {
        // The signature only: the location comment after it names no type.
        let code = text.split("  # ").next().unwrap_or(text);
        for word in code.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if word.is_empty() || word.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            let target = if is_class(file, word) {
                Some((file.to_string(), word.to_string()))
            } else {
                imported
                    .iter()
                    .find(|n| n.name == word && is_class(&n.file, &n.symbol))
                    .map(|n| (n.file.clone(), n.symbol.clone()))
            };
            if let Some(target) = target
                && !found.contains(&target)
            {
                found.push(target);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(text: &str) -> usize {
        tiktoken_rs::cl100k_base_singleton()
            .encode_with_special_tokens(text)
            .len()
    }

    #[test]
    fn text_of_short_lines_counts_exactly_and_a_long_line_never_less() {
        let code: String = (0..400)
            .map(|i| format!("    value_{i} = compute(value_{i}, \"é\")\n"))
            .collect();
        assert!(code.len() > LONG_LINE);
        assert_eq!(count_tokens(&code), exact(&code));
        let long = format!("{code}x = \"{}\"\n{code}", "yé".repeat(5_000));
        assert!(count_tokens(&long) >= exact(&long));
        assert!(pieces(&long, PIECE).all(|p| p.len() <= PIECE + 3));
        assert_eq!(pieces(&long, PIECE).collect::<String>(), long);
    }
}
