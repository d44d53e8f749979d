//! `AsyncClient`'s verbs in the caller's own PostgreSQL transaction, from
//! async code (features `tokio` + `postgres`; sqlx with `sqlx`): "insert
//! the order and its timeout" commits or rolls back as one. An impl block
//! of `AsyncClient`'s; the statements are the backend's
//! (`store/postgres/async_tx.rs`), reached through `PostgresBackend::of`.

use std::time::Duration;

use super::async_client::AsyncClient;
use crate::durable::store::backend::{Cancelled, DurableError, Put, PutMode, When};
use crate::durable::store::envelope::Payload;
use crate::durable::store::postgres::{AsyncPgTx, PostgresBackend};

// ===== impl AsyncClient (features tokio + postgres) =====

#[cfg_attr(docsrs, doc(cfg(all(feature = "tokio", feature = "postgres"))))]
impl AsyncClient {
    /// [`schedule`](Self::schedule) in the caller's transaction `tx`: a
    /// `sqlx::Transaction<'_, Postgres>` or `&mut PgConnection` (feature
    /// `sqlx`), or a `tokio_postgres::Transaction` or `Client` (see
    /// [`AsyncPgTx`]). It commits or rolls back with `tx`: a rolled-back
    /// schedule is never delivered; a committed one is delivered no earlier
    /// than its deadline, fixed by the server's clock at this statement
    /// (`delay` after it), and is claimed no earlier than that by the
    /// store's clock. `tx` must be a connection to the pool's database.
    ///
    /// Cancel-safe as far as a transaction is: dropped mid-way, the
    /// statement either ran in `tx` or did not, and `tx`'s commit or
    /// rollback decides. (A statement cut off mid-reply may leave the
    /// connection unusable for the next one; roll `tx` back.)
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule); the server's error (which aborts
    /// `tx`); [`DurableError::Config`] when the pool is not on a
    /// [`PostgresBackend`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn checkout(client: &schedpool::durable::AsyncClient, db: &sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    ///
    /// let mut tx = db.begin().await?;
    /// sqlx::query("INSERT INTO orders (id, state) VALUES ($1, 'unpaid')")
    ///     .bind(42i64)
    ///     .execute(&mut *tx)
    ///     .await?;
    /// client.schedule_in(&mut tx, "close-order", "order-42", &42u64, Duration::from_secs(1800)).await?;
    /// tx.commit().await?; // the order and its timeout, or neither
    /// # Ok(())
    /// # }
    /// ```
    pub async fn schedule_in<C: AsyncPgTx + ?Sized, T: Payload>(
        &self,
        tx: &mut C,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        let sealed = self.inner.seal(kind, id, value, None)?;
        let pg = PostgresBackend::of(&*self.inner.store, "schedule_in")?;
        pg.put_in_async(tx, id, &sealed, When::After(delay), PutMode::Replace)
            .await
    }

    /// [`schedule_if_absent`](Self::schedule_if_absent) in the caller's
    /// transaction, as [`schedule_in`](Self::schedule_in).
    ///
    /// # Errors
    ///
    /// As [`schedule_in`](Self::schedule_in).
    pub async fn schedule_if_absent_in<C: AsyncPgTx + ?Sized, T: Payload>(
        &self,
        tx: &mut C,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        let sealed = self.inner.seal(kind, id, value, None)?;
        let pg = PostgresBackend::of(&*self.inner.store, "schedule_if_absent_in")?;
        pg.put_in_async(tx, id, &sealed, When::After(delay), PutMode::IfAbsent)
            .await
    }

    /// [`cancel`](Self::cancel) in the caller's transaction: `true` when
    /// the id existed. Undone if `tx` rolls back (the item stays, and still
    /// runs at its time).
    ///
    /// Cancel-safe as [`schedule_in`](Self::schedule_in).
    ///
    /// # Errors
    ///
    /// As [`schedule_in`](Self::schedule_in).
    pub async fn cancel_in<C: AsyncPgTx + ?Sized>(
        &self,
        tx: &mut C,
        id: &str,
    ) -> Result<bool, DurableError> {
        let pg = PostgresBackend::of(&*self.inner.store, "cancel_in")?;
        Ok(pg.cancel_in_async(tx, id).await? != Cancelled::NotFound)
    }
}
