//! The plainest tokio echo server: the floor `c10k serve --model tokio` is
//! measured against (`bench/grid.py --models tokio`).
//!
//! A task per connection on tokio's multi-thread runtime, reading into a
//! buffer and writing it all back until the peer closes: what tokio's own
//! echo example does, and nothing c10k's model adds (no stop pipe, no
//! accounting, no bounded-memory or half-close care beyond what the loop
//! gives, no `--work`). Its workers are one per CPU it may run on, so
//! `taskset -c 0` gives one, as `--cpus 0` gives c10k's model.
//!
//! `cargo build --release --example tokio_echo`, then
//! `target/release/examples/tokio_echo PORT [ADDR]` (ADDR 127.0.0.1). It
//! prints `READY ADDR:PORT` once listening.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let port = args.next().unwrap_or_else(|| "0".into());
    let addr = args.next().unwrap_or_else(|| "127.0.0.1".into());
    let listener = TcpListener::bind(format!("{addr}:{port}")).await?;
    println!("READY {}", listener.local_addr()?);
    loop {
        let (mut socket, _) = listener.accept().await?;
        socket.set_nodelay(true)?;
        tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if socket.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}
