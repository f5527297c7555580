//! The cache file's bytes: a fixed header (magic, format version, key,
//! payload length, SHA-256 of the payload), then one record per file:
//! path, SHA-256 of the text the facts were extracted from, and the facts
//! in MessagePack. Records decode in parallel; any flaw rejects the whole
//! file (a partial cache is never trusted).

use std::sync::Arc;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use xfile_python::ModuleFacts;

const MAGIC: [u8; 8] = *b"XFILEWC\0";
/// Bumped whenever the layout below changes.
pub(crate) const FORMAT: u32 = 1;
const HEADER_LEN: usize = MAGIC.len() + 4 + 32 + 8 + 32;
/// Where the key sits in the header (tests alter it there).
pub const KEY_OFFSET: usize = MAGIC.len() + 4;

pub(crate) type Hash = [u8; 32];

pub(crate) fn sha256(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

/// One file's cached facts, valid for the text whose hash it carries.
pub(crate) struct Entry {
    pub path: String,
    pub hash: Hash,
    pub facts: Arc<ModuleFacts>,
}

/// Why a cache file was not used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Rejected {
    #[error("it is not an xfile cache")]
    Magic,
    #[error("it has format {0}, this xfile reads format {FORMAT}")]
    Format(u32),
    #[error("it was written for another xfile build, rules, configuration or search roots")]
    Key,
    #[error("it is truncated or has trailing bytes")]
    Length,
    #[error("its checksum does not match (corrupt, or written over while read)")]
    Checksum,
    #[error("a record does not decode")]
    Record,
}

/// Encodes the records that fit in `cap` bytes in all (records are added
/// in the order given; one larger than `max_record` is left out). Each
/// record is written straight into the one output buffer, the header
/// filled in last: a served project writes this in the background after
/// its first index, and buffers per record, then a payload, then the
/// output, held the facts' encoding three times over (on Django about
/// 100 MB more at the peak, left behind as scattered pages).
pub(crate) fn encode(key: &Hash, entries: &[Entry], max_record: usize, cap: usize) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(key);
    out.resize(HEADER_LEN, 0);
    for entry in entries {
        let start = out.len();
        let written = push_record(&mut out, entry).is_some() && out.len() - start <= max_record;
        if !written {
            out.truncate(start);
        } else if out.len() > cap {
            out.truncate(start);
            break;
        }
    }
    let payload_len = (out.len() - HEADER_LEN) as u64;
    let checksum = sha256(&out[HEADER_LEN..]);
    let length_at = KEY_OFFSET + 32;
    out[length_at..length_at + 8].copy_from_slice(&payload_len.to_le_bytes());
    out[length_at + 8..HEADER_LEN].copy_from_slice(&checksum);
    out
}

/// Appends one record: path, hash, then the facts behind their length.
fn push_record(out: &mut Vec<u8>, entry: &Entry) -> Option<()> {
    push_bytes(out, entry.path.as_bytes())?;
    out.extend_from_slice(&entry.hash);
    let length_at = out.len();
    out.extend_from_slice(&[0; 4]);
    rmp_serde::encode::write(out, &*entry.facts).ok()?;
    let len = u32::try_from(out.len() - length_at - 4).ok()?;
    out[length_at..length_at + 4].copy_from_slice(&len.to_le_bytes());
    Some(())
}

fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Option<()> {
    out.extend_from_slice(&u32::try_from(bytes.len()).ok()?.to_le_bytes());
    out.extend_from_slice(bytes);
    Some(())
}

/// The header's format and key, without checking the payload.
pub(crate) fn header(bytes: &[u8]) -> Result<(u32, Hash), Rejected> {
    let rest = bytes.strip_prefix(&MAGIC).ok_or(Rejected::Magic)?;
    let (format, rest) = split::<4>(rest).ok_or(Rejected::Length)?;
    let (key, _) = split::<32>(rest).ok_or(Rejected::Length)?;
    Ok((u32::from_le_bytes(format), key))
}

/// The records of a cache file written with `key`.
pub(crate) fn decode(bytes: &[u8], key: &Hash) -> Result<Vec<Entry>, Rejected> {
    let (format, found) = header(bytes)?;
    if format != FORMAT {
        return Err(Rejected::Format(format));
    }
    if found != *key {
        return Err(Rejected::Key);
    }
    let rest = &bytes[KEY_OFFSET + 32..];
    let (len, rest) = split::<8>(rest).ok_or(Rejected::Length)?;
    let (checksum, payload) = split::<32>(rest).ok_or(Rejected::Length)?;
    if u64::try_from(payload.len()).ok() != Some(u64::from_le_bytes(len)) {
        return Err(Rejected::Length);
    }
    if sha256(payload) != checksum {
        return Err(Rejected::Checksum);
    }
    let mut records = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        let (path, after) = take_bytes(rest).ok_or(Rejected::Record)?;
        let (hash, after) = split::<32>(after).ok_or(Rejected::Record)?;
        let (facts, after) = take_bytes(after).ok_or(Rejected::Record)?;
        let path = std::str::from_utf8(path).map_err(|_| Rejected::Record)?;
        records.push((path, hash, facts));
        rest = after;
    }
    records
        .into_par_iter()
        .map(|(path, hash, facts)| {
            let facts: ModuleFacts = rmp_serde::from_slice(facts).map_err(|_| Rejected::Record)?;
            Ok(Entry {
                path: path.to_string(),
                hash,
                facts: Arc::new(facts),
            })
        })
        .collect()
}

fn split<const N: usize>(bytes: &[u8]) -> Option<([u8; N], &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<N>()?;
    Some((*head, rest))
}

fn take_bytes(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = split::<4>(bytes)?;
    let len = usize::try_from(u32::from_le_bytes(len)).ok()?;
    (rest.len() >= len).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<Entry> {
        ["import os\n", "class A(B): pass\n"]
            .iter()
            .enumerate()
            .map(|(i, text)| Entry {
                path: format!("m{i}.py"),
                hash: sha256(text.as_bytes()),
                facts: Arc::new(xfile_python::extract(text)),
            })
            .collect()
    }

    #[test]
    fn records_round_trip_and_flaws_are_named() {
        let key = sha256(b"key");
        let bytes = encode(&key, &entries(), usize::MAX, usize::MAX);
        let back = decode(&bytes, &key).expect("decodes");
        assert_eq!(back.len(), 2);
        for (a, b) in back.iter().zip(entries()) {
            assert_eq!((&a.path, a.hash, &*a.facts), (&b.path, b.hash, &*b.facts));
        }
        assert_eq!(decode(&bytes, &sha256(b"other")).err(), Some(Rejected::Key));
        let cut = &bytes[..bytes.len() - 1];
        assert_eq!(decode(cut, &key).err(), Some(Rejected::Length));
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(decode(&flipped, &key).err(), Some(Rejected::Checksum));
        assert_eq!(decode(b"XFILE", &key).err(), Some(Rejected::Magic));
    }

    #[test]
    fn the_cap_leaves_records_out() {
        let key = sha256(b"key");
        let all = encode(&key, &entries(), usize::MAX, usize::MAX);
        let one = encode(&key, &entries(), usize::MAX, all.len() - 1);
        assert_eq!(decode(&one, &key).expect("decodes").len(), 1);
        let none = encode(&key, &entries(), 8, usize::MAX);
        assert_eq!(decode(&none, &key).expect("decodes").len(), 0);
    }
}
