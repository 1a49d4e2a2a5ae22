//! A front for the mock model that holds the requests a test picks until a
//! given number of them have arrived, then lets them all through: a test
//! that needs calls in flight together proves it by their all being held at
//! once, not by reading a clock. Plain HTTP/1.1 over std threads (one a
//! connection), forwarding each request's bytes to the mock server as they
//! came and its answer back as it went.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::Value;

/// How long a held request waits for the others before it goes through
/// anyway, so that a run that never overlaps fails (see [`Hold::met`])
/// instead of hanging.
const GUARD: Duration = Duration::from_secs(20);

/// Which requests to hold, and how many must arrive before any goes on.
pub struct Hold {
    count: usize,
    which: fn(&Value) -> bool,
    arrived: Mutex<usize>,
    all_in: Condvar,
}

impl Hold {
    pub fn new(count: usize, which: fn(&Value) -> bool) -> Arc<Self> {
        Arc::new(Self {
            count,
            which,
            arrived: Mutex::new(0),
            all_in: Condvar::new(),
        })
    }

    /// Whether `count` held requests were in flight at once. A request that
    /// arrives after that passes straight through.
    pub fn met(&self) -> bool {
        *self.arrived.lock().unwrap() >= self.count
    }

    fn arrive(&self) {
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        if *arrived >= self.count {
            self.all_in.notify_all();
            return;
        }
        let _ = self
            .all_in
            .wait_timeout_while(arrived, GUARD, |n| *n < self.count)
            .unwrap();
    }
}

/// Starts the front for the server at `upstream` (`host:port`); its
/// address as `http://host:port`.
pub fn front(upstream: String, hold: Arc<Hold>, skip: fn(&Value) -> bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let (upstream, hold) = (upstream.clone(), Arc::clone(&hold));
            std::thread::spawn(move || {
                let _ = connection(client, &upstream, &hold, skip);
            });
        }
    });
    format!("http://{address}")
}

/// Serves one keep-alive connection until the client closes it.
fn connection(
    client: TcpStream,
    upstream: &str,
    hold: &Hold,
    skip: fn(&Value) -> bool,
) -> std::io::Result<()> {
    let mut from_client = BufReader::new(client.try_clone()?);
    let mut to_client = client;
    let server = TcpStream::connect(upstream)?;
    let mut from_server = BufReader::new(server.try_clone()?);
    let mut to_server = server;
    while let Some((head, body)) = message(&mut from_client)? {
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !skip(&value) && (hold.which)(&value) {
            hold.arrive();
        }
        to_server.write_all(&head)?;
        to_server.write_all(&body)?;
        let Some((head, body)) = message(&mut from_server)? else {
            return Ok(());
        };
        to_client.write_all(&head)?;
        to_client.write_all(&body)?;
    }
    Ok(())
}

/// One HTTP/1.1 message with a `content-length` body (what reqwest sends
/// and the mock answers): its head, as read, and its body. `None` at the
/// end of the stream.
fn message(from: &mut impl BufRead) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut head = Vec::new();
    let mut length = 0;
    loop {
        let mut line = Vec::new();
        if from.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&line).to_ascii_lowercase();
        if let Some(value) = text.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        head.extend_from_slice(&line);
        if line == b"\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    from.read_exact(&mut body)?;
    Ok(Some((head, body)))
}
