//! `skewdb serve` (one node of a cluster, `skewdb-raft` over HTTP) and `skewdb cluster`
//! (forming and changing a cluster, writing and reading through it). See
//! `DISTRIBUTION.md`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::Value;
use skewdb_raft::client::{Client, ClientError};
use skewdb_raft::node::{NodeConfig, serve};

use crate::failure::Failure;

/// `skewdb serve`'s arguments.
#[derive(Args)]
pub struct ServeArgs {
    /// This node's id in the cluster (a positive number, unique in it).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub id: u64,
    /// The node's directory (made when it does not exist): its Raft log, its state
    /// machine's database and its snapshots.
    #[arg(long)]
    pub data: PathBuf,
    /// Where to listen, HOST:PORT: the address the other nodes and the clients use.
    #[arg(long)]
    pub listen: String,
    /// The leader's heartbeat interval in milliseconds; an election starts after 3 to 6
    /// of them missed.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub heartbeat_ms: u64,
    /// Entries applied between two snapshots (the log before one is then purged).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub snapshot_every: u64,
}

/// `skewdb cluster`'s commands. `--node` names the nodes to ask (any of the cluster's;
/// requests that need the leader follow it from there).
#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Make the nodes given a cluster (once, on one of them): --member ID=ADDR each.
    Init {
        /// The node to ask, HOST:PORT (one of the members).
        #[arg(long)]
        node: String,
        /// A member, ID=HOST:PORT (repeatable).
        #[arg(long = "member", value_name = "ID=ADDR", required = true)]
        members: Vec<String>,
    },
    /// Add node ID listening at ADDR: it catches up as a learner, then votes.
    Add {
        /// A node of the cluster, HOST:PORT (repeatable).
        #[arg(long = "node", required = true)]
        nodes: Vec<String>,
        /// The new node's id.
        id: u64,
        /// The address it listens at.
        addr: String,
    },
    /// Remove voter ID from the cluster.
    Remove {
        /// A node of the cluster, HOST:PORT (repeatable).
        #[arg(long = "node", required = true)]
        nodes: Vec<String>,
        /// The node's id.
        id: u64,
    },
    /// What each node given knows: its role, term, leader, log and applied indexes, the
    /// members (one JSON line per node).
    Status {
        /// A node, HOST:PORT (repeatable).
        #[arg(long = "node", required = true)]
        nodes: Vec<String>,
    },
    /// `skewdb exec`'s JSON lines from standard input, through the leader: each batch one
    /// log entry, answered once committed and applied, with its log index. Takes `create`
    /// too: {"op":"create","coll":..,"arrays":[{"field":..,"layout":..}]} (a cluster's
    /// collections hold bytes: "bytes":true may be said, document fields are refused), and
    /// `alter` and `drop` as `exec` spells them (rollup spans in the keys' units).
    Exec {
        /// A node of the cluster, HOST:PORT (repeatable).
        #[arg(long = "node", required = true)]
        nodes: Vec<String>,
    },
    /// Print a parent with every item of every array, as JSON.
    Get {
        /// A node of the cluster, HOST:PORT (repeatable).
        #[arg(long = "node", required = true)]
        nodes: Vec<String>,
        /// The collection.
        collection: String,
        /// The parent's key (its UTF-8 bytes).
        key: String,
        /// Read from the first node given, as it has applied, not from the leader
        /// (linearizable) as by default.
        #[arg(long)]
        local: bool,
        /// With --local: first wait until that node applied this log index (the index a
        /// write returned: read your writes).
        #[arg(long, requires = "local")]
        min_index: Option<u64>,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new("io", format!("cannot start the runtime: {e}")))
}

/// Runs a node until SIGINT or SIGTERM.
pub fn run_serve(args: ServeArgs) -> Result<ExitCode, Failure> {
    let mut config = NodeConfig::new(args.id, args.data, args.listen);
    config.heartbeat = Duration::from_millis(args.heartbeat_ms);
    config.snapshot_every = args.snapshot_every;
    let id = config.id;
    runtime()?.block_on(async move {
        let stop = async {
            let terminate = async {
                #[cfg(unix)]
                if let Ok(mut signal) =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                {
                    signal.recv().await;
                    return;
                }
                std::future::pending::<()>().await
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate => {}
            }
        };
        serve(config, stop, |addr| {
            tracing::info!(node = id, %addr, "listening");
            eprintln!("skewdb: node {id} listening on {addr}");
        })
        .await
        .map_err(|e| Failure::new("io", e.to_string()))
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A failure of the cluster, in the tool's kinds.
fn cluster_failure(error: ClientError) -> Failure {
    match error {
        ClientError::Refused(failure) => {
            let kind = match failure.kind.as_str() {
                "unknown_collection" => "unknown_collection",
                "not_leader" => "not_leader",
                "already_initialized" => "already_initialized",
                "behind" => "behind",
                "invalid_input" => crate::failure::INVALID_INPUT,
                _ => "cluster",
            };
            Failure::new(kind, failure.error)
        }
        ClientError::Unknown(why) => Failure::new("unknown_outcome", why),
        ClientError::Unavailable(why) => Failure::new("unavailable", why),
    }
}

fn print(value: &impl serde::Serialize) -> Result<(), Failure> {
    let line = serde_json::to_string(value).expect("JSON of plain data");
    writeln!(std::io::stdout().lock(), "{line}")
        .map_err(|e| Failure::new("io", format!("cannot write: {e}")))
}

fn member(text: &str) -> Result<(u64, String), Failure> {
    let bad = || Failure::usage(format!("--member {text:?}: expected ID=HOST:PORT"));
    let (id, addr) = text.split_once('=').ok_or_else(bad)?;
    let id: u64 = id.trim().parse().map_err(|_| bad())?;
    if id == 0 || addr.trim().is_empty() {
        return Err(bad());
    }
    Ok((id, addr.trim().to_string()))
}

/// Runs one `skewdb cluster` command.
pub fn run_cluster(command: ClusterCommand) -> Result<ExitCode, Failure> {
    let runtime = runtime()?;
    match command {
        ClusterCommand::Init { node, members } => {
            let members = members
                .iter()
                .map(|m| member(m))
                .collect::<Result<Vec<_>, _>>()?;
            let client = Client::new([node]);
            runtime
                .block_on(client.init(members))
                .map_err(cluster_failure)?;
            print(
                &runtime
                    .block_on(client.status(0))
                    .map_err(cluster_failure)?,
            )?;
        }
        ClusterCommand::Add { nodes, id, addr } => {
            let client = Client::new(nodes);
            let status = runtime
                .block_on(client.add(id, &addr))
                .map_err(cluster_failure)?;
            print(&status)?;
        }
        ClusterCommand::Remove { nodes, id } => {
            let client = Client::new(nodes);
            let status = runtime
                .block_on(client.remove(id))
                .map_err(cluster_failure)?;
            print(&status)?;
        }
        ClusterCommand::Status { nodes } => {
            let client = Client::new(nodes.clone());
            let mut unreachable = false;
            for (at, addr) in nodes.iter().enumerate() {
                match runtime.block_on(client.status(at)) {
                    Ok(status) => print(&status)?,
                    Err(error) => {
                        unreachable = true;
                        print(&serde_json::json!({"node": addr, "error": error.to_string()}))?;
                    }
                }
            }
            if unreachable {
                return Ok(ExitCode::from(1));
            }
        }
        ClusterCommand::Exec { nodes } => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|e| Failure::new("io", format!("cannot read standard input: {e}")))?;
            let client = Client::new(nodes);
            let answer = runtime
                .block_on(client.exec(&input))
                .map_err(cluster_failure)?;
            let mut failed = false;
            let mut stdout = std::io::stdout().lock();
            for line in answer.lines() {
                let value: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                if value.get("error").is_some() {
                    failed = true;
                    eprintln!("skewdb: error: {line}");
                }
                writeln!(stdout, "{line}")
                    .map_err(|e| Failure::new("io", format!("cannot write: {e}")))?;
            }
            if failed {
                return Ok(ExitCode::from(1));
            }
        }
        ClusterCommand::Get {
            nodes,
            collection,
            key,
            local,
            min_index,
        } => {
            let client = Client::new(nodes);
            let read = match local {
                true => {
                    runtime.block_on(client.read_local(0, &collection, key.as_bytes(), min_index))
                }
                false => runtime.block_on(client.read(&collection, key.as_bytes())),
            }
            .map_err(cluster_failure)?;
            match read.document {
                Some(document) => print(&serde_json::json!({"index": read.index,
                    "document": document}))?,
                None => {
                    return Err(Failure::new(
                        crate::failure::NOT_FOUND,
                        format!(
                            "no parent {key:?} in {collection} (as of index {})",
                            read.index
                        ),
                    ));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
