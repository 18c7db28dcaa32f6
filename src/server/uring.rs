//! `uring`: not built yet.

use std::net::TcpListener;

use super::{Context, Model};

pub struct Uring;

impl Model for Uring {
    fn name(&self) -> &'static str {
        "uring"
    }
    fn about(&self) -> &'static str {
        "not built yet"
    }
    fn probe(&self, _config: &super::Config) -> Result<(), String> {
        Err("not built yet".into())
    }
    fn serve(&self, _listener: TcpListener, _ctx: &Context) -> anyhow::Result<()> {
        anyhow::bail!("not built yet")
    }
}
