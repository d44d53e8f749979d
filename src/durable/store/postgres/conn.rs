//! One connection the backend owns: a `tokio-postgres` client on a
//! current-thread runtime of its own, every call bounded in time.
//!
//! The synchronous `postgres` client (what a caller's transaction is) has
//! no per-call timeout: with every server process stopped (a frozen VM, a
//! partition without RST) the kernel still acknowledges what is sent, so a
//! call waited for the whole stall, and a peer that accepted TCP and never
//! answered held `connect` for minutes whatever `connect_timeout` said
//! (that bounds the TCP connect only). Here each call, the connect with its
//! startup exchange included, runs under `tokio::time::timeout`.
//!
//! Invariants:
//!
//! - A call that times out marks the connection broken: its reply may
//!   still come, so the connection is never used again (`is_closed`), and
//!   dropping it closes the socket.
//! - The connection's messages are read by one task on the runtime, which
//!   runs only while a call (or a wait for a notification) is in
//!   `block_on`; notifications are queued for `next_notification`, notices
//!   dropped. Fields drop in order: the client, then the queue, then the
//!   runtime (which ends the task and closes the socket).

use std::future::{poll_fn, Future};
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_postgres::types::ToSql;
use tokio_postgres::{
    AsyncMessage, Client, Config, NoTls, Notification, Row, Statement, ToStatement,
};

use super::error::CallError;
use super::tls::Connector;

/// See the module documentation.
pub(super) struct PgConn {
    client: Client,
    notes: UnboundedReceiver<Notification>,
    rt: Runtime,
    /// How long the next call may take (set by the caller's retry loop).
    pub(super) budget: Duration,
    broken: bool,
}

impl PgConn {
    /// Connects to `config` with `tls`: the TCP connect, TLS and the
    /// startup exchange (authentication) together within `within`.
    pub(super) fn connect(
        config: &Config,
        tls: &Connector,
        within: Duration,
    ) -> Result<Self, CallError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(CallError::Io)?;
        let connect = async {
            match tls {
                Connector::Plain => {
                    let (client, connection) = config.connect(NoTls).await?;
                    Ok((client, drive(connection)))
                }
                #[cfg(feature = "postgres-tls")]
                Connector::Rustls(make) => {
                    let (client, connection) = config.connect(make.clone()).await?;
                    Ok((client, drive(connection)))
                }
            }
        };
        let (client, notes) = rt.block_on(async {
            match tokio::time::timeout(within, connect).await {
                Ok(connected) => connected.map_err(CallError::Pg),
                Err(_) => Err(CallError::ConnectTimedOut(within)),
            }
        })?;
        Ok(PgConn {
            client,
            notes,
            rt,
            budget: within,
            broken: false,
        })
    }

    /// True once the connection closed or a call on it timed out.
    pub(super) fn is_closed(&self) -> bool {
        self.broken || self.client.is_closed()
    }

    /// Runs `f` on the client within the budget.
    fn call<'a, T, F>(&'a mut self, f: impl FnOnce(&'a Client) -> F) -> Result<T, CallError>
    where
        F: Future<Output = Result<T, tokio_postgres::Error>> + 'a,
    {
        let budget = self.budget;
        let PgConn {
            client, rt, broken, ..
        } = self;
        // The timer is made inside the runtime (`timeout` needs its clock).
        let fut = f(client);
        match rt.block_on(async { tokio::time::timeout(budget, fut).await }) {
            Ok(r) => r.map_err(CallError::Pg),
            Err(_) => {
                *broken = true;
                Err(CallError::TimedOut(budget))
            }
        }
    }

    pub(super) fn query<T: ?Sized + ToStatement + Sync>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, CallError> {
        self.call(|c| c.query(statement, params))
    }

    pub(super) fn query_one<T: ?Sized + ToStatement + Sync>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, CallError> {
        self.call(|c| c.query_one(statement, params))
    }

    pub(super) fn query_opt<T: ?Sized + ToStatement + Sync>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, CallError> {
        self.call(|c| c.query_opt(statement, params))
    }

    pub(super) fn execute<T: ?Sized + ToStatement + Sync>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, CallError> {
        self.call(|c| c.execute(statement, params))
    }

    pub(super) fn batch_execute(&mut self, sql: &str) -> Result<(), CallError> {
        self.call(|c| c.batch_execute(sql))
    }

    pub(super) fn prepare(&mut self, sql: &str) -> Result<Statement, CallError> {
        self.call(|c| c.prepare(sql))
    }

    /// The next notification, waiting at most `limit`: `Ok(None)` when
    /// none came.
    ///
    /// # Errors
    ///
    /// [`CallError::Closed`] when the connection closed.
    pub(super) fn next_notification(
        &mut self,
        limit: Duration,
    ) -> Result<Option<Notification>, CallError> {
        let PgConn { notes, rt, .. } = self;
        match rt.block_on(async { tokio::time::timeout(limit, notes.recv()).await }) {
            Ok(Some(note)) => Ok(Some(note)),
            Ok(None) => Err(CallError::Closed),
            Err(_) => Ok(None),
        }
    }

    /// Drops the notifications already queued.
    pub(super) fn drain_notifications(&mut self) {
        while self.notes.try_recv().is_ok() {}
    }
}

/// Spawns the task that reads `connection`'s messages on the runtime this
/// runs in: notifications go to the returned queue, notices are dropped,
/// and the task ends with the connection.
fn drive<S, T>(mut connection: tokio_postgres::Connection<S, T>) -> UnboundedReceiver<Notification>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        while let Some(Ok(message)) = poll_fn(|cx| connection.poll_message(cx)).await {
            if let AsyncMessage::Notification(note) = message {
                let _ = tx.send(note);
            }
        }
    });
    rx
}
