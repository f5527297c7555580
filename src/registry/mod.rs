//! The persistent registry of projects and collections (federation): which
//! project directories xfile knows by name, and which named collections
//! group them. One SQLite database per user, `registry.sqlite3` in
//! `$XFILE_HOME` or the user's data directory, shared by every xfile
//! process (WAL mode, a busy timeout). It depends on nothing else in xfile.

mod error;
mod location;
mod model;
mod schema;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior};

pub use error::RegistryError;
use error::classify;
pub use model::{Collection, Project};

/// How long a write waits for another process's write to finish before
/// giving up with [`RegistryError::Locked`]. Writes are tiny, but a
/// commit waits for the disk: six processes creating the database at once
/// on a machine busy writing a build once waited past 5 s, so the limit
/// leaves room for a slow disk and is still exceeded only when something
/// holds the lock for real.
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// A connection to the registry. Reads take `&self`, changes `&mut self`;
/// each change is one transaction, checked and applied under the write
/// lock, so concurrent processes never see half of one.
pub struct Registry {
    conn: Connection,
    path: PathBuf,
}

/// Maps a SQLite failure to the error the user can act on.
fn sql<T>(path: &Path, result: rusqlite::Result<T>) -> Result<T, RegistryError> {
    result.map_err(|e| classify(path, e))
}

const PROJECT_COLUMNS: &str = "id, name, path, added_at";

fn project_row(row: &Row) -> rusqlite::Result<Project> {
    Ok(Project {
        id: row.get(0)?,
        name: row.get(1)?,
        path: row.get(2)?,
        added_at: row.get(3)?,
    })
}

/// Whether a directory must look like a Python project to be registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// It must hold a [`PROJECT_MARKERS`] entry, a top-level `.py` file or
    /// a top-level package: always so for an MCP session.
    Required,
    /// Any directory but `/` and the home directory (`project add --force`).
    Optional,
}

/// Entries whose presence at a directory's top makes it a Python project.
pub const PROJECT_MARKERS: [&str; 4] = ["pyproject.toml", "setup.py", "setup.cfg", ".git"];

/// Top-level entries looked at for a `.py` file or a package, at most: a
/// project shows one long before, and a huge directory is no project root.
const ENTRIES_LOOKED_AT: usize = 10_000;

/// `dir`, canonical, if it may be registered: an existing directory, not
/// the file system's root nor the user's home directory (serving either
/// would index and write a cache into everything below), and with
/// `Marker::Required` a Python project: a [`PROJECT_MARKERS`] entry, or a
/// `.py` file or a package (a directory with `__init__.py`) at its top.
pub fn project_root(dir: &Path, marker: Marker) -> Result<PathBuf, RegistryError> {
    let canonical = dir
        .canonicalize()
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| RegistryError::NotADirectory(dir.to_path_buf()))?;
    if canonical.parent().is_none() {
        return Err(RegistryError::TooWide(canonical, "the file system's root"));
    }
    let home = dirs::home_dir().and_then(|h| h.canonicalize().ok());
    if home.is_some_and(|home| home == canonical) {
        return Err(RegistryError::TooWide(canonical, "your home directory"));
    }
    if marker == Marker::Required && !is_python_project(&canonical) {
        return Err(RegistryError::NotAProject(canonical));
    }
    Ok(canonical)
}

fn is_python_project(dir: &Path) -> bool {
    if PROJECT_MARKERS
        .iter()
        .any(|m| std::fs::symlink_metadata(dir.join(m)).is_ok())
    {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries
        .take(ENTRIES_LOOKED_AT)
        .filter_map(Result::ok)
        .any(|entry| {
            let Ok(kind) = entry.file_type() else {
                return false;
            };
            let path = entry.path();
            if kind.is_file() {
                path.extension().is_some_and(|e| e == "py")
            } else if kind.is_dir() {
                std::fs::symlink_metadata(path.join("__init__.py")).is_ok_and(|m| m.is_file())
            } else {
                false
            }
        })
}

/// Names end up in command lines (`--projects a,b`) and next to paths, so
/// they keep clear of separators and option syntax.
fn check_name(name: &str) -> Result<(), RegistryError> {
    let bad = name.is_empty()
        || name.trim() != name
        || name.starts_with('-')
        || name
            .chars()
            .any(|c| c == ',' || c == '/' || c == '\\' || c.is_control());
    if bad {
        return Err(RegistryError::InvalidName(name.to_string()));
    }
    Ok(())
}

/// The project registered under `name_or_path`: a name first, else the
/// canonical form of a path to a registered directory, else, for a
/// directory deleted since, the absolute path as registered.
fn find_project(conn: &Connection, name_or_path: &str) -> rusqlite::Result<Option<Project>> {
    let by_name = conn
        .query_row(
            &format!("SELECT {PROJECT_COLUMNS} FROM projects WHERE name = ?1"),
            [name_or_path],
            project_row,
        )
        .optional()?;
    if by_name.is_some() {
        return Ok(by_name);
    }
    let given = Path::new(name_or_path);
    let path = match given.canonicalize() {
        Ok(canonical) => match canonical.to_str() {
            Some(text) => text.to_string(),
            None => return Ok(None),
        },
        Err(_) if given.is_absolute() => name_or_path.to_string(),
        Err(_) => return Ok(None),
    };
    conn.query_row(
        &format!("SELECT {PROJECT_COLUMNS} FROM projects WHERE path = ?1"),
        [path],
        project_row,
    )
    .optional()
}

fn require_project(
    conn: &Connection,
    path: &Path,
    name_or_path: &str,
) -> Result<Project, RegistryError> {
    sql(path, find_project(conn, name_or_path))?
        .ok_or_else(|| RegistryError::ProjectNotFound(name_or_path.to_string()))
}

fn find_collection(conn: &Connection, name: &str) -> rusqlite::Result<Option<Collection>> {
    let Some((id, name, created_at)) = conn
        .query_row(
            "SELECT id, name, created_at FROM collections WHERE name = ?1",
            [name],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?
    else {
        return Ok(None);
    };
    let projects = member_rows(conn, id)?
        .into_iter()
        .map(|project| project.name)
        .collect();
    Ok(Some(Collection {
        id,
        name,
        created_at,
        projects,
    }))
}

fn require_collection(
    conn: &Connection,
    path: &Path,
    name: &str,
) -> Result<Collection, RegistryError> {
    sql(path, find_collection(conn, name))?
        .ok_or_else(|| RegistryError::CollectionNotFound(name.to_string()))
}

fn member_rows(conn: &Connection, collection_id: i64) -> rusqlite::Result<Vec<Project>> {
    let mut statement = conn.prepare(
        "SELECT p.id, p.name, p.path, p.added_at FROM projects p
         JOIN membership m ON m.project_id = p.id
         WHERE m.collection_id = ?1 ORDER BY p.name",
    )?;
    let rows = statement.query_map([collection_id], project_row)?;
    rows.collect()
}

fn is_member(conn: &Connection, collection: i64, project: i64) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM membership WHERE collection_id = ?1 AND project_id = ?2)",
        [collection, project],
        |row| row.get(0),
    )
}

impl Registry {
    /// The registry file the environment names, whether or not it exists.
    pub fn default_path() -> Result<PathBuf, RegistryError> {
        Ok(location::default_dir()?.join(location::FILE_NAME))
    }

    /// Opens (creating if needed) the registry in `$XFILE_HOME`, else in
    /// `xfile/` under the user's data directory.
    pub fn open() -> Result<Self, RegistryError> {
        Self::open_at(&location::default_dir()?)
    }

    /// Opens (creating if needed) the registry in directory `dir`,
    /// bringing its schema up to date.
    pub fn open_at(dir: &Path) -> Result<Self, RegistryError> {
        // SQLite answers "busy" at once, without waiting out the busy
        // timeout, when processes race to create the file and switch it to
        // WAL: such an open is tried again until the timeout is spent.
        let started = std::time::Instant::now();
        loop {
            match Self::try_open_at(dir) {
                Err(RegistryError::Locked(_)) if started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                opened => return opened,
            }
        }
    }

    fn try_open_at(dir: &Path) -> Result<Self, RegistryError> {
        let dir = location::prepare_dir(dir)?;
        let path = dir.join(location::FILE_NAME);
        // NOFOLLOW: SQLite itself refuses a link at the database's path,
        // should one appear after the check in `prepare_dir`.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = sql(&path, Connection::open_with_flags(&path, flags))?;
        sql(&path, conn.busy_timeout(BUSY_TIMEOUT))?;
        // WAL lets readers go on while one process writes, so the CLI and
        // a running server use the registry at once. This is also the
        // first read of the file, where a corrupt one shows.
        sql(
            &path,
            conn.query_row("PRAGMA journal_mode = WAL", [], |row| {
                row.get::<_, String>(0)
            }),
        )?;
        sql(&path, conn.pragma_update(None, "foreign_keys", true))?;
        schema::migrate(&mut conn, &path)?;
        Ok(Registry { conn, path })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `change` in one write transaction and commits what it did.
    fn write<T>(
        &mut self,
        change: impl FnOnce(&Transaction, &Path) -> Result<T, RegistryError>,
    ) -> Result<T, RegistryError> {
        let path = &self.path;
        let tx = sql(
            path,
            self.conn
                .transaction_with_behavior(TransactionBehavior::Immediate),
        )?;
        let value = change(&tx, path)?;
        sql(path, tx.commit())?;
        Ok(value)
    }

    /// Registers the Python project in directory `dir` (canonicalized)
    /// under `name`, by default the directory's name (see [`project_root`]).
    pub fn add_project(
        &mut self,
        dir: &Path,
        name: Option<&str>,
    ) -> Result<Project, RegistryError> {
        self.add_project_with(dir, name, Marker::Required)
    }

    /// [`Registry::add_project`]; `Marker::Optional` (the CLI's `--force`)
    /// lets in a directory without a project marker, but never `/` or the
    /// home directory.
    pub fn add_project_with(
        &mut self,
        dir: &Path,
        name: Option<&str>,
        marker: Marker,
    ) -> Result<Project, RegistryError> {
        let canonical = project_root(dir, marker)?;
        let path_text = canonical
            .to_str()
            .ok_or_else(|| RegistryError::NonUtf8Path(canonical.clone()))?
            .to_string();
        let name = match name {
            Some(name) => name.to_string(),
            None => canonical
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        check_name(&name)?;
        self.write(|tx, db| {
            let holder = |column: &str, value: &str| {
                sql(
                    db,
                    tx.query_row(
                        &format!("SELECT name FROM projects WHERE {column} = ?1"),
                        [value],
                        |row| row.get::<_, String>(0),
                    )
                    .optional(),
                )
            };
            // The path first: adding a directory again is the likelier
            // mistake, and its name then collides too.
            if let Some(existing) = holder("path", &path_text)? {
                return Err(RegistryError::ProjectPathTaken {
                    path: path_text,
                    name: existing,
                });
            }
            if holder("name", &name)?.is_some() {
                return Err(RegistryError::ProjectNameTaken(name));
            }
            sql(
                db,
                tx.query_row(
                    &format!(
                        "INSERT INTO projects (name, path) VALUES (?1, ?2) RETURNING {PROJECT_COLUMNS}"
                    ),
                    [&name, &path_text],
                    project_row,
                ),
            )
        })
    }

    /// Every registered project, by name.
    pub fn projects(&self) -> Result<Vec<Project>, RegistryError> {
        let path = &self.path;
        let mut statement = sql(
            path,
            self.conn.prepare(&format!(
                "SELECT {PROJECT_COLUMNS} FROM projects ORDER BY name"
            )),
        )?;
        let rows = sql(path, statement.query_map([], project_row))?;
        sql(path, rows.collect())
    }

    /// The project registered under a name, or at a path.
    pub fn project(&self, name_or_path: &str) -> Result<Project, RegistryError> {
        require_project(&self.conn, &self.path, name_or_path)
    }

    /// Forgets a project (named, or by path) and its memberships; its
    /// directory is left alone.
    pub fn remove_project(&mut self, name_or_path: &str) -> Result<Project, RegistryError> {
        self.write(|tx, db| {
            let project = require_project(tx, db, name_or_path)?;
            sql(
                db,
                tx.execute("DELETE FROM projects WHERE id = ?1", [project.id]),
            )?;
            Ok(project)
        })
    }

    /// Creates collection `name` holding `projects` (names or paths of
    /// registered projects); nothing is created if one is unknown.
    pub fn create_collection(
        &mut self,
        name: &str,
        projects: &[&str],
    ) -> Result<Collection, RegistryError> {
        check_name(name)?;
        self.write(|tx, db| {
            if sql(db, find_collection(tx, name))?.is_some() {
                return Err(RegistryError::CollectionNameTaken(name.to_string()));
            }
            let members = projects
                .iter()
                .map(|p| require_project(tx, db, p))
                .collect::<Result<Vec<_>, _>>()?;
            let id: i64 = sql(
                db,
                tx.query_row(
                    "INSERT INTO collections (name) VALUES (?1) RETURNING id",
                    [name],
                    |row| row.get(0),
                ),
            )?;
            for member in &members {
                // The same project named twice (by name and by path) is
                // one membership.
                sql(
                    db,
                    tx.execute(
                        "INSERT OR IGNORE INTO membership (collection_id, project_id) VALUES (?1, ?2)",
                        [id, member.id],
                    ),
                )?;
            }
            require_collection(tx, db, name)
        })
    }

    /// Adds a registered project to a collection.
    pub fn add_to_collection(
        &mut self,
        collection: &str,
        project: &str,
    ) -> Result<Collection, RegistryError> {
        self.write(|tx, db| {
            let found = require_collection(tx, db, collection)?;
            let member = require_project(tx, db, project)?;
            if sql(db, is_member(tx, found.id, member.id))? {
                return Err(RegistryError::AlreadyMember {
                    collection: found.name,
                    project: member.name,
                });
            }
            sql(
                db,
                tx.execute(
                    "INSERT INTO membership (collection_id, project_id) VALUES (?1, ?2)",
                    [found.id, member.id],
                ),
            )?;
            require_collection(tx, db, collection)
        })
    }

    /// Takes a project out of a collection; the project stays registered.
    pub fn remove_from_collection(
        &mut self,
        collection: &str,
        project: &str,
    ) -> Result<Collection, RegistryError> {
        self.write(|tx, db| {
            let found = require_collection(tx, db, collection)?;
            let member = require_project(tx, db, project)?;
            let removed = sql(
                db,
                tx.execute(
                    "DELETE FROM membership WHERE collection_id = ?1 AND project_id = ?2",
                    [found.id, member.id],
                ),
            )?;
            if removed == 0 {
                return Err(RegistryError::NotMember {
                    collection: found.name,
                    project: member.name,
                });
            }
            require_collection(tx, db, collection)
        })
    }

    /// Every collection with its member names, by name.
    pub fn collections(&self) -> Result<Vec<Collection>, RegistryError> {
        let path = &self.path;
        // One query, so a concurrent change shows wholly or not at all.
        let mut statement = sql(
            path,
            self.conn.prepare(
                "SELECT c.id, c.name, c.created_at, p.name FROM collections c
                 LEFT JOIN membership m ON m.collection_id = c.id
                 LEFT JOIN projects p ON p.id = m.project_id
                 ORDER BY c.name, p.name",
            ),
        )?;
        let rows = sql(
            path,
            statement.query_map([], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Option<String>>(3)?,
                ))
            }),
        )?;
        let mut collections: Vec<Collection> = Vec::new();
        for row in rows {
            let (id, name, created_at, member) = sql(path, row)?;
            if collections.last().is_none_or(|c| c.id != id) {
                collections.push(Collection {
                    id,
                    name,
                    created_at,
                    projects: Vec::new(),
                });
            }
            if let (Some(member), Some(collection)) = (member, collections.last_mut()) {
                collection.projects.push(member);
            }
        }
        Ok(collections)
    }

    /// One collection with its member names.
    pub fn collection(&self, name: &str) -> Result<Collection, RegistryError> {
        require_collection(&self.conn, &self.path, name)
    }

    /// The member projects of a collection, by name, with their paths.
    pub fn members(&self, collection: &str) -> Result<Vec<Project>, RegistryError> {
        let found = require_collection(&self.conn, &self.path, collection)?;
        sql(&self.path, member_rows(&self.conn, found.id))
    }

    /// Deletes a collection; its projects stay registered.
    pub fn delete_collection(&mut self, name: &str) -> Result<Collection, RegistryError> {
        self.write(|tx, db| {
            let found = require_collection(tx, db, name)?;
            sql(
                db,
                tx.execute("DELETE FROM collections WHERE id = ?1", [found.id]),
            )?;
            Ok(found)
        })
    }
}
