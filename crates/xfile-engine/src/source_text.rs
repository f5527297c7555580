//! A file's text as the engine's input: held only until its facts are
//! extracted, then identified by a fingerprint and read back from disk
//! when an answer shows lines of it.
//!
//! Why: on Django the texts are 17 MB of a served project's ~165 MB live
//! heap, and after the first index nothing in the engine reads them; only
//! an answer that quotes source lines does, for one file at a time.
//!
//! The fingerprint is the input's value as far as salsa is concerned: a
//! text let go is the same text, so letting it go is no change. Reading it
//! back is checked against the fingerprint, so a file changed on disk and
//! not yet applied gives no text rather than lines the facts do not
//! describe.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use twox_hash::XxHash3_128;

/// Reads a project file's current text from disk (root-relative path), as
/// discovery does; `None` when it cannot. What the engine reads a text back
/// with after letting it go; without one, it keeps every text.
pub type TextLoader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Length and 128-bit hash: what tells two texts apart.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Fingerprint {
    len: usize,
    hash: u128,
}

impl Fingerprint {
    fn of(text: &str) -> Self {
        Fingerprint {
            len: text.len(),
            hash: XxHash3_128::oneshot(text.as_bytes()),
        }
    }
}

/// One file's text: its fingerprint, and the text itself while held.
/// Clones share what is held, so a snapshot sees a text let go too.
#[derive(Clone)]
pub(crate) struct SourceText {
    fingerprint: Fingerprint,
    held: Arc<Mutex<Option<Arc<str>>>>,
}

impl SourceText {
    pub(crate) fn new(text: String) -> Self {
        SourceText {
            fingerprint: Fingerprint::of(&text),
            held: Arc::new(Mutex::new(Some(Arc::from(text)))),
        }
    }

    /// Whether `text` is this text.
    pub(crate) fn is(&self, text: &str) -> bool {
        // The length first: most edits change it, and it costs nothing.
        text.len() == self.fingerprint.len && Fingerprint::of(text) == self.fingerprint
    }

    pub(crate) fn held(&self) -> Option<Arc<str>> {
        self.slot().clone()
    }

    /// The text, held or else read back with `loader` if the disk still
    /// has it.
    pub(crate) fn get(&self, path: &str, loader: Option<&TextLoader>) -> Option<Arc<str>> {
        if let Some(text) = self.held() {
            return Some(text);
        }
        let read = loader?(path)?;
        self.is(&read).then(|| Arc::from(read))
    }

    /// Drops the held text (its facts are extracted).
    pub(crate) fn let_go(&self) {
        self.slot().take();
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<str>>> {
        // The slot holds plain data, consistent whatever a panicking
        // holder was doing.
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for SourceText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceText")
            .field("len", &self.fingerprint.len)
            .field("held", &self.slot().is_some())
            .finish()
    }
}

/// A file's indexed text to read without the engine: what a writer holds
/// once it has dropped its snapshot (which would hold every update back)
/// and reads many texts one by one.
#[derive(Clone)]
pub struct TextRef {
    path: String,
    text: SourceText,
    loader: Option<TextLoader>,
}

impl TextRef {
    pub(crate) fn new(path: &str, text: &SourceText, loader: Option<&TextLoader>) -> Self {
        TextRef {
            path: path.to_string(),
            text: text.clone(),
            loader: loader.cloned(),
        }
    }

    /// As `Engine::text` at the time the reference was taken.
    pub fn read(&self) -> Option<Arc<str>> {
        self.text.get(&self.path, self.loader.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_let_go_is_read_back_only_while_the_disk_still_has_it() {
        let text = SourceText::new("x = 1\n".to_string());
        assert!(text.is("x = 1\n"));
        assert!(!text.is("x = 2\n"));
        text.let_go();
        assert_eq!(text.held(), None);
        let same: TextLoader = Arc::new(|_| Some("x = 1\n".to_string()));
        let edited: TextLoader = Arc::new(|_| Some("x = 2\n".to_string()));
        assert_eq!(text.get("a.py", Some(&same)).as_deref(), Some("x = 1\n"));
        assert_eq!(text.get("a.py", Some(&edited)), None);
        assert_eq!(text.get("a.py", None), None);
    }
}
