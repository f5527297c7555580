//! Several projects served together: which registered projects a server
//! or session sees (`scope`), and how references cross from one project
//! into another (`links`). It works on snapshots of each project's
//! [`Service`](crate::service::Service); keeping projects indexed and
//! watched is the server's business.

pub mod links;
pub mod scope;

pub use links::{CrossIndex, Peer};
pub use scope::{Level, Scope, SessionError, Sessions};
