//! `conduct quest add|retire|pay`: edit the quest board's files in the data directory
//! (`quests.json`, `paid.json`; library/MUNUS.md), through core's `munus::edit`.

use clap::Subcommand;

#[derive(Subcommand)]
pub enum QuestCmd {
    /// Add a quest.
    Add {
        /// Quest id: 1 to 64 of a-z, 0-9 and -.
        #[arg(long)]
        id: String,
        /// Short title.
        #[arg(long)]
        title: String,
        /// The design rung it belongs to.
        #[arg(long)]
        rung: String,
        /// What the work is.
        #[arg(long)]
        what: String,
        /// What must be delivered.
        #[arg(long)]
        deliverable: String,
        /// How a delivery is checked: review or machine.
        #[arg(long, default_value = "review")]
        check: String,
    },
    /// Retire a quest: it leaves the board and takes no claim (its records stay in the log).
    Retire {
        /// Quest id.
        id: String,
    },
    /// Record a payment made by an on-chain token transfer (re-read from the chain, never
    /// trusted from this row).
    Pay {
        /// The quest paid for.
        #[arg(long)]
        quest: String,
        /// The worker's wallet.
        #[arg(long)]
        to: String,
        /// Amount in the token's base units (a decimal integer).
        #[arg(long)]
        amount: String,
        /// The ERC-20 token transferred.
        #[arg(long)]
        token: String,
        /// The transaction hash.
        #[arg(long)]
        tx: String,
    },
}

/// Apply one `conduct quest` edit to its file in `data`.
pub fn edit_quests(data: &std::path::Path, action: QuestCmd) -> Result<String, String> {
    use conduct_core::munus::{edit, PAID_FILE, QUESTS_FILE};
    let (file, done) = match &action {
        QuestCmd::Pay { .. } => (PAID_FILE, "payment recorded"),
        QuestCmd::Add { .. } => (QUESTS_FILE, "quest added"),
        QuestCmd::Retire { .. } => (QUESTS_FILE, "quest retired"),
    };
    let path = data.join(file);
    let old = match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let new = match action {
        QuestCmd::Add {
            id,
            title,
            rung,
            what,
            deliverable,
            check,
        } => edit::add_quest(
            old.as_deref(),
            serde_json::json!({"id": id, "title": title, "rung": rung, "what": what,
                "deliverable": deliverable, "check": check}),
        ),
        QuestCmd::Retire { id } => edit::retire_quest(old.as_deref(), &id),
        QuestCmd::Pay {
            quest,
            to,
            amount,
            token,
            tx,
        } => edit::add_paid(
            old.as_deref(),
            serde_json::json!({"quest": quest, "to": to, "amount_scry": amount,
                "token": token, "tx": tx}),
        ),
    }
    .map_err(|e| e.to_string())?;
    std::fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
    conduct_indexer::durable::write_atomic(&path, &new, 0o600)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(format!("{done}: {}", path.display()))
}
