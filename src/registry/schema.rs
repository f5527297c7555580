//! The registry's schema as an ordered list of migrations. The database's
//! `PRAGMA user_version` is the number of migrations applied; a program
//! applies the ones it is missing, in one transaction, and refuses a
//! database that has more than it knows (a newer xfile wrote it).

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::error::{RegistryError, classify};

/// Migration `i` takes the schema from version `i` to `i + 1`. Append
/// only: a released step is never edited, since databases already carry it.
const MIGRATIONS: &[&str] = &[
    // 1: projects, collections, and which projects each collection holds.
    // Membership cascades from both sides: deleting a collection forgets
    // its memberships only, removing a project drops it from every
    // collection.
    "CREATE TABLE projects (
         id INTEGER PRIMARY KEY,
         name TEXT NOT NULL UNIQUE,
         path TEXT NOT NULL UNIQUE,
         added_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
     ) STRICT;
     CREATE TABLE collections (
         id INTEGER PRIMARY KEY,
         name TEXT NOT NULL UNIQUE,
         created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
     ) STRICT;
     CREATE TABLE membership (
         collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
         project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
         PRIMARY KEY (collection_id, project_id)
     ) STRICT, WITHOUT ROWID;
     -- The cascade from projects looks memberships up by project.
     CREATE INDEX membership_by_project ON membership(project_id);",
];

fn version(conn: &Connection, path: &Path) -> Result<i64, RegistryError> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|e| classify(path, e))
}

/// Brings the database at `path` up to the last of [`MIGRATIONS`].
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), RegistryError> {
    apply(conn, path, MIGRATIONS)
}

/// Applies the `steps` the database lacks, all or none.
fn apply(conn: &mut Connection, path: &Path, steps: &[&str]) -> Result<(), RegistryError> {
    let target = steps.len() as i64;
    // Most opens find the schema current: check without taking the write
    // lock, so a CLI command does not wait on a busy server for nothing.
    let found = version(conn, path)?;
    check_not_newer(found, target, path)?;
    if found == target {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| classify(path, e))?;
    // Another process may have migrated while this one waited for the lock.
    let found = version(&tx, path)?;
    check_not_newer(found, target, path)?;
    if found == 0 {
        // Version 0 is also any SQLite file that is not a registry: do not
        // add tables to someone else's database.
        let tables: i64 = tx
            .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
            .map_err(|e| classify(path, e))?;
        if tables > 0 {
            return Err(RegistryError::Corrupt(path.to_path_buf()));
        }
    }
    for step in &steps[found as usize..] {
        tx.execute_batch(step).map_err(|e| classify(path, e))?;
    }
    tx.pragma_update(None, "user_version", target)
        .map_err(|e| classify(path, e))?;
    tx.commit().map_err(|e| classify(path, e))
}

fn check_not_newer(found: i64, known: i64, path: &Path) -> Result<(), RegistryError> {
    if found < 0 {
        // xfile never writes a negative version: another program's file.
        return Err(RegistryError::Corrupt(path.to_path_buf()));
    }
    if found > known {
        return Err(RegistryError::TooNew {
            path: path.to_path_buf(),
            found,
            supported: known,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(conn: &Connection) -> Vec<String> {
        let mut statement = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .expect("prepare");
        let rows = statement.query_map([], |row| row.get(0)).expect("query");
        rows.collect::<Result<_, _>>().expect("rows")
    }

    #[test]
    fn a_database_gets_the_steps_it_lacks_and_a_failed_step_changes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("registry.sqlite3");
        let mut conn = Connection::open(&path).expect("open");
        let one = ["CREATE TABLE a (x INTEGER)"];
        apply(&mut conn, &path, &one).expect("step 1");
        assert_eq!(version(&conn, &path).expect("version"), 1);

        let broken = [one[0], "CREATE TABLE b (x INTEGER); CREATE TABLE oops ("];
        let error = apply(&mut conn, &path, &broken).expect_err("bad step");
        assert_eq!(error.code(), "registry_error");
        assert_eq!(version(&conn, &path).expect("version"), 1);
        assert_eq!(tables(&conn), ["a"]);

        let two = [one[0], "CREATE TABLE b (x INTEGER)"];
        apply(&mut conn, &path, &two).expect("step 2");
        assert_eq!(version(&conn, &path).expect("version"), 2);
        assert_eq!(tables(&conn), ["a", "b"]);
        // Already current: nothing to do, and an older program refuses it.
        apply(&mut conn, &path, &two).expect("current");
        let error = apply(&mut conn, &path, &one).expect_err("older program");
        assert_eq!(error.code(), "registry_too_new");
    }

    #[test]
    fn the_schema_is_current_after_migrating() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("registry.sqlite3");
        let mut conn = Connection::open(&path).expect("open");
        migrate(&mut conn, &path).expect("migrate");
        assert_eq!(
            version(&conn, &path).expect("version"),
            MIGRATIONS.len() as i64
        );
        assert_eq!(tables(&conn), ["collections", "membership", "projects"]);
    }
}
