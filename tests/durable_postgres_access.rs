#![cfg(feature = "postgres-tls")]
//! Who may connect to the PostgreSQL backend: TLS (rustls) to a cluster the
//! test configures with `ssl=on` and a certificate it makes, where
//! `pg_hba.conf` rejects plain connections and asks SCRAM over TLS; a wrong
//! CA is refused with a clear error; and a role with only the grants of
//! `docs/durable.md` on a schema an administrator migrated runs a pool.

mod durable_support;
mod postgres_support;
mod tls_support;

use std::thread;
use std::time::{Duration, Instant};

use postgres_support::{watchdog, Postgres};
use schedpool::durable::{
    DurableError, DurableQueue, PostgresBackend, PostgresOptions, QueueOptions,
};
use tls_support::Certs;

fn opts() -> QueueOptions {
    QueueOptions {
        lease: Duration::from_secs(10),
        max_block: Duration::from_millis(500),
        max_attempts: 0,
    }
}

/// TLS-only for every role but the test's superuser (which sets up).
fn tls_only_hba(pg: &Postgres) {
    std::fs::write(
        pg.dir.join("data/pg_hba.conf"),
        "host all postgres 127.0.0.1/32 trust\n\
         hostnossl all all 127.0.0.1/32 reject\n\
         hostssl all all 127.0.0.1/32 scram-sha-256\n",
    )
    .unwrap();
    pg.client()
        .batch_execute("SELECT pg_reload_conf()")
        .unwrap();
    thread::sleep(Duration::from_millis(200));
}

#[test]
fn tls_with_the_servers_ca_works_a_wrong_ca_or_plain_connection_is_refused() {
    watchdog(Duration::from_secs(60), || {
        let certs = Certs::generate("pg");
        let pg = Postgres::start_tls(&certs.cert, &certs.key);
        pg.client()
            .batch_execute(
                "SET password_encryption = 'scram-sha-256';
                 CREATE ROLE app LOGIN PASSWORD 'app-secret';
                 CREATE SCHEMA app_jobs AUTHORIZATION app;",
            )
            .unwrap();
        tls_only_hba(&pg);
        let params = format!(
            "host=127.0.0.1 port={} user=app password=app-secret dbname=postgres",
            pg.port
        );
        // Seconds for what succeeds (TLS and SCRAM on a loaded machine);
        // the wrong CA below gets far longer, so a retried refusal shows.
        let base = PostgresOptions::default()
            .schema("app_jobs")
            .op_timeout(Duration::from_secs(5));

        // Plain: pg_hba rejects it, and says so.
        let err = PostgresBackend::connect_with(&params, "q", base.clone()).unwrap_err();
        assert!(
            matches!(&err, DurableError::Config(m) if m.contains("no encryption")),
            "plain: {err:?}"
        );

        // TLS with the CA that signed the server's certificate.
        let good = base.clone().ca_file(&certs.ca).unwrap().require_tls(true);
        let b = PostgresBackend::connect_with(&params, "q", good).unwrap();
        let q: DurableQueue<String> = DurableQueue::with_options(b, opts()).unwrap();
        q.put("k", &"over tls".into(), Duration::ZERO).unwrap();
        let d = q
            .poll_timeout(Duration::from_secs(5))
            .unwrap()
            .expect("due");
        assert_eq!(d.value(), "over tls");
        d.ack().unwrap();

        // A CA that did not sign it: refused at once, as configuration.
        let t = Instant::now();
        let wrong = base
            .clone()
            .ca_file(&certs.other_ca)
            .unwrap()
            .op_timeout(Duration::from_secs(20));
        let err = PostgresBackend::connect_with(&params, "q", wrong).unwrap_err();
        assert!(
            matches!(&err, DurableError::Config(m) if m.contains("certificate")),
            "wrong CA: {err:?}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "refused at once, not retried for the 20 s op_timeout: {:?}",
            t.elapsed()
        );

        // sslmode=require in the parameters means TLS too (the system roots
        // do not hold the test CA: refused).
        let err = PostgresBackend::connect_with(&format!("{params} sslmode=require"), "q", base)
            .unwrap_err();
        assert!(
            matches!(&err, DurableError::Config(m) if m.contains("certificate")),
            "system roots: {err:?}"
        );
    });
}

#[test]
fn require_tls_refuses_a_server_without_tls() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let certs = Certs::generate("pg-plain");
        let o = PostgresOptions::default()
            .ca_file(&certs.ca)
            .unwrap()
            .op_timeout(Duration::from_secs(5));
        let err = PostgresBackend::connect_with(&pg.params(), "q", o).unwrap_err();
        assert!(matches!(err, DurableError::Config(_)), "{err:?}");
    });
}

#[test]
fn a_role_with_only_the_documented_grants_on_a_migrated_schema_runs_a_pool() {
    watchdog(Duration::from_secs(90), || {
        let certs = Certs::generate("pg-grants");
        let pg = Postgres::start_tls(&certs.cert, &certs.key);
        let mut admin = pg.client();
        // The administrator migrates by hand; the role gets the grants of
        // docs/durable.md and nothing else.
        admin
            .batch_execute(&PostgresBackend::migration_sql("jobs"))
            .unwrap();
        admin
            .batch_execute(
                "SET password_encryption = 'scram-sha-256';
                 CREATE ROLE worker LOGIN PASSWORD 'w-secret';
                 REVOKE ALL ON DATABASE postgres FROM PUBLIC;
                 GRANT CONNECT ON DATABASE postgres TO worker;
                 REVOKE CREATE ON SCHEMA public FROM PUBLIC;
                 GRANT USAGE ON SCHEMA jobs TO worker;
                 GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA jobs TO worker;
                 GRANT USAGE ON ALL SEQUENCES IN SCHEMA jobs TO worker;
                 GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA jobs TO worker;",
            )
            .unwrap();
        tls_only_hba(&pg);
        let params = format!(
            "host=127.0.0.1 port={} user=worker password=w-secret dbname=postgres",
            pg.port
        );
        let o = PostgresOptions::default()
            .schema("jobs")
            .migrate(false)
            .ca_file(&certs.ca)
            .unwrap()
            .require_tls(true);
        let b = PostgresBackend::connect_with(&params, "q", o.clone()).unwrap();
        durable_support::every_pool_verb_works(b);
        // It may not create a schema of its own (the migration needs more).
        let err = PostgresBackend::connect_with(&params, "q", o.schema("elsewhere").migrate(true))
            .unwrap_err();
        assert!(matches!(err, DurableError::Config(_)), "{err:?}");
    });
}
