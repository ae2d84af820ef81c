//! The PostgreSQL schema, versioned: migration `i` takes the schema to version `i + 1`. Each
//! table is its SQLite twin's (`state/sqlite/mod.rs`) with PostgreSQL's types: `BIGINT` for
//! integers, `BYTEA` for bytes, `BOOLEAN` for flags, and the C collation for the text keys that
//! are ordered or paged through (byte order, as SQLite compares: both backends list the same
//! rows in the same order, whatever the database's own collation).

use super::Conn;
use crate::state::StoreError;

/// Ordered migrations; index + 1 is the schema version.
const MIGRATIONS: &[&str] = &[
    // 1: every table of the service's state.
    "CREATE TABLE payment (
        network TEXT NOT NULL,
        payer TEXT NOT NULL,
        nonce TEXT NOT NULL,
        rail TEXT NOT NULL,
        resource TEXT NOT NULL,
        amount TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('claimed', 'settled', 'failed', 'unsettled')),
        tx TEXT,
        detail TEXT,
        claimed_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        payload TEXT,
        PRIMARY KEY (network, payer, nonce)
    );
    CREATE TABLE idempotency (
        key TEXT PRIMARY KEY,
        body BYTEA NOT NULL,
        created_at BIGINT NOT NULL,
        request TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX idempotency_created ON idempotency (created_at);
    CREATE TABLE leaf (
        idx BIGINT PRIMARY KEY,
        data BYTEA NOT NULL,
        hash BYTEA NOT NULL
    );
    CREATE TABLE node (
        level BIGINT NOT NULL,
        idx BIGINT NOT NULL,
        hash BYTEA NOT NULL,
        PRIMARY KEY (level, idx)
    );
    CREATE TABLE checkpoint (
        id BIGINT PRIMARY KEY CHECK (id = 1),
        size BIGINT NOT NULL,
        root BYTEA NOT NULL,
        note TEXT NOT NULL
    );
    CREATE TABLE vow (
        vow_id TEXT COLLATE \"C\" PRIMARY KEY,
        log_index BIGINT NOT NULL UNIQUE,
        agent TEXT COLLATE \"C\" NOT NULL,
        text TEXT NOT NULL,
        sealed BOOLEAN NOT NULL,
        sandbox BOOLEAN NOT NULL,
        wallet TEXT,
        signed_message TEXT UNIQUE,
        cadence_seconds BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        head_seq BIGINT NOT NULL,
        head_hash TEXT NOT NULL,
        head_at BIGINT NOT NULL
    );
    CREATE INDEX vow_agent ON vow (agent);
    CREATE INDEX vow_wallet ON vow (wallet);
    CREATE TABLE vow_entry (
        vow_id TEXT COLLATE \"C\" NOT NULL,
        seq BIGINT NOT NULL,
        log_index BIGINT NOT NULL UNIQUE,
        at BIGINT NOT NULL,
        PRIMARY KEY (vow_id, seq)
    );
    CREATE TABLE free_cap (
        counter TEXT NOT NULL,
        day BIGINT NOT NULL,
        bucket TEXT NOT NULL,
        used BIGINT NOT NULL,
        PRIMARY KEY (counter, day, bucket)
    );
    CREATE TABLE report_signature (
        signature TEXT PRIMARY KEY,
        vow_id TEXT NOT NULL,
        seq BIGINT NOT NULL
    );
    CREATE TABLE reading (
        vow_id TEXT COLLATE \"C\" PRIMARY KEY,
        covers_seq BIGINT NOT NULL,
        interpretation TEXT NOT NULL,
        at BIGINT NOT NULL
    );
    CREATE TABLE munus_record (
        log_index BIGINT PRIMARY KEY,
        quest_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        tx TEXT UNIQUE,
        data BYTEA NOT NULL
    );
    CREATE TABLE munus_signature (
        signature TEXT PRIMARY KEY,
        log_index BIGINT NOT NULL
    );
    CREATE TABLE npub_binding (
        log_index BIGINT PRIMARY KEY,
        npub TEXT COLLATE \"C\" NOT NULL,
        pubkey TEXT NOT NULL,
        vow_id TEXT NOT NULL,
        at BIGINT NOT NULL
    );
    CREATE INDEX npub_binding_npub ON npub_binding (npub, log_index);
    CREATE INDEX npub_binding_vow ON npub_binding (vow_id, at);
    CREATE TABLE npub_signature (
        signature TEXT PRIMARY KEY,
        log_index BIGINT NOT NULL
    );
    CREATE TABLE witness_pledge (
        log_index BIGINT PRIMARY KEY,
        vow_id TEXT NOT NULL,
        wallet TEXT NOT NULL,
        at BIGINT NOT NULL,
        data BYTEA NOT NULL
    );
    CREATE INDEX witness_pledge_vow ON witness_pledge (vow_id, log_index);
    CREATE TABLE witness_signature (
        signature TEXT PRIMARY KEY,
        log_index BIGINT NOT NULL
    );
    CREATE TABLE familiar (
        familiar_id TEXT COLLATE \"C\" PRIMARY KEY,
        log_index BIGINT NOT NULL UNIQUE,
        owner_wallet TEXT NOT NULL,
        owner_vow TEXT,
        at BIGINT NOT NULL,
        data BYTEA NOT NULL
    );
    CREATE TABLE familiar_signature (
        signature TEXT PRIMARY KEY,
        log_index BIGINT NOT NULL
    );
    CREATE TABLE payment_identifier (
        scope TEXT NOT NULL,
        id TEXT NOT NULL,
        payload TEXT NOT NULL,
        request TEXT NOT NULL,
        network TEXT NOT NULL,
        payer TEXT NOT NULL,
        nonce TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('open', 'pending', 'served')),
        status BIGINT,
        receipt TEXT,
        record BYTEA,
        location TEXT,
        tx TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (scope, id)
    );
    CREATE TABLE reading_ask (
        vow_id TEXT COLLATE \"C\" PRIMARY KEY,
        seq BIGINT NOT NULL,
        at BIGINT NOT NULL
    );",
    // 2: donated traces and the renderer's resume points (SQLite keeps each in a file of its
    // own).
    "CREATE TABLE donated (
        vow_id TEXT NOT NULL,
        trace_sha256 TEXT NOT NULL,
        trace BYTEA NOT NULL,
        donated_at BIGINT NOT NULL,
        PRIMARY KEY (vow_id, trace_sha256)
    );
    CREATE TABLE resume_point (
        vow_id TEXT PRIMARY KEY,
        render TEXT NOT NULL,
        records BIGINT NOT NULL,
        sha256 TEXT NOT NULL,
        state BYTEA NOT NULL
    );",
    // 3: the chain index (SQLite keeps it in a file of its own): what the chain said, where
    // the follower is, and what the manifests gave.
    "CREATE TABLE chain_meta (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        identity TEXT NOT NULL
    );
    CREATE TABLE chain_cursor (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        number BIGINT NOT NULL,
        hash TEXT NOT NULL,
        synced_at BIGINT NOT NULL
    );
    CREATE TABLE chain_anchor (
        number BIGINT PRIMARY KEY,
        hash TEXT NOT NULL
    );
    CREATE TABLE registry_event (
        block_number BIGINT NOT NULL,
        block_hash TEXT NOT NULL,
        log_index BIGINT NOT NULL,
        tx_hash TEXT NOT NULL,
        tool_id BIGINT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('registered', 'metadata', 'predicate', 'deregistered')),
        creator TEXT,
        uri TEXT,
        hash TEXT,
        predicate TEXT,
        PRIMARY KEY (block_number, log_index)
    );
    CREATE INDEX registry_event_tool ON registry_event (tool_id, block_number, log_index);
    CREATE TABLE registry_check (
        tool_id BIGINT PRIMARY KEY,
        uri TEXT NOT NULL,
        hash TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        computed TEXT,
        detail TEXT,
        claims TEXT NOT NULL,
        checked_at BIGINT NOT NULL
    );
    CREATE TABLE reputation_event (
        block_number BIGINT NOT NULL,
        block_hash TEXT NOT NULL,
        log_index BIGINT NOT NULL,
        tx_hash TEXT NOT NULL,
        kind TEXT NOT NULL,
        who TEXT,
        actor TEXT,
        amount TEXT,
        value TEXT,
        reason TEXT,
        PRIMARY KEY (block_number, log_index)
    );
    CREATE INDEX reputation_event_who ON reputation_event (who);",
];

/// The advisory lock that serialises migrations of one database (any 64-bit constant: this
/// is `conduct-state` in ASCII, cut to 8 bytes).
const MIGRATION_LOCK: i64 = 0x636f_6e64_7563_742d;

/// Create or migrate the schema in one transaction, under the advisory lock (several nodes
/// may start at once); refuse a database migrated by a newer program.
pub(super) fn migrate(conn: &Conn) -> Result<(), StoreError> {
    conn.in_transaction("BEGIN", |conn| {
        conn.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        conn.batch("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")?;
        let found: i64 = match conn.query_opt("SELECT version FROM schema_version", &[])? {
            Some(row) => row.try_get(0)?,
            None => {
                conn.execute("INSERT INTO schema_version (version) VALUES (0)", &[])?;
                0
            }
        };
        let known = MIGRATIONS.len() as i64;
        if found > known {
            return Err(StoreError::TooNew { found, known });
        }
        for (i, &sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            conn.batch(sql)?;
            conn.execute("UPDATE schema_version SET version = $1", &[&(i as i64 + 1)])?;
        }
        Ok(())
    })
}
