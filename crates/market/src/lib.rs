//! aviary-market: Hummingbird's control plane on an EVM chain (the Hummingbird paper, its
//! market on an EVM chain instead of Sui).
//!
//! - [`bindings`]: `sol!` bindings generated from the committed artifacts in `contracts/`.
//! - [`contracts`]: typed calls ([`Deployment`]) on any [`Ledger`].
//! - [`Ledger`] with two backends: [`EmbeddedLedger`] (revm in this process, the default,
//!   persisted in a data directory) and [`RpcLedger`] (any EVM node over JSON-RPC).
//! - [`registration`]: P-256 keys and the signatures an AS registers with.
//! - [`client`]: the buyer's side: offers along a path, the cheapest plan the buyer can pay
//!   (a hop side may chain several listings), atomic purchase with price limits, re-planning
//!   after a revert, waiting for and opening the sealed reservations.
//! - [`SharedLedger`]: the embedded ledger used by several processes through its directory.
//!
//! Reverts come back as [`LedgerError::Revert`] with the contract error's name and arguments,
//! e.g. `PaymentTooLow(required=600, available=0)`, decoded against the errors of all the
//! contracts (errors of BandwidthAssets pass through Market calls unchanged).
//!
//! Both ledgers use chain id 31337 and the same ten dev accounts ([`Account::dev`]: private
//! key `sha256("aviary-dev-account-{i}")`, public test keys, 10 000 ETH each at genesis), which
//! `contracts/hardhat.config.js` funds on the Hardhat node of the integration tests. Those
//! tests need `npm ci` in `contracts/` (it installs the pinned Hardhat); without it the
//! JSON-RPC test fails and says so.
//!
//! Sketch:
//! ```no_run
//! use aviary_market::{Deployment, EmbeddedLedger, Ledger};
//! let mut ledger = EmbeddedLedger::open("data/ledger")?;
//! let owner = ledger.accounts()[0].clone();
//! let dep = Deployment::deploy_all(&mut ledger, &owner)?;
//! # Ok::<(), aviary_market::LedgerError>(())
//! ```

pub mod accounts;
pub mod bindings;
pub mod client;
pub mod contracts;
pub mod embedded;
mod error;
pub mod ledger;
pub mod registration;
pub mod rpc;
pub mod shared;
pub mod snapshot;
pub mod state_log;
pub mod tx;

pub use accounts::Account;
pub use contracts::{AssetSpec, Deployment};
pub use embedded::EmbeddedLedger;
pub use error::{LedgerError, Revert};
pub use ledger::{Ledger, Receipt, Submitted};
pub use rpc::RpcLedger;
pub use shared::SharedLedger;

/// Re-exported so users need not depend on alloy themselves.
pub use alloy_primitives::{Address, Bytes, B256, U256};
