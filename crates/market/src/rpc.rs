//! The JSON-RPC ledger: any EVM node over HTTP (blocking `ureq`, no async runtime), with
//! transactions signed locally ([`crate::tx`]).
//!
//! Sending: nonce from `eth_getTransactionCount(pending)`, fees from the latest block's base fee
//! and `eth_maxPriorityFeePerGas`, gas from `eth_estimateGas` capped at [`TX_GAS_CAP`] (Hardhat's
//! estimate of large path purchases fails against Osaka's cap, and an estimate of a reverting
//! call fails too: both then send with the cap, so a revert is mined and charged as on the
//! embedded ledger), then `eth_sendRawTransaction` and polling `eth_getTransactionReceipt`.
//! Receipts carry no revert data: for a failed transaction the same call is replayed with
//! `eth_call` on the parent block to obtain it. `submit` stops after `eth_sendRawTransaction`
//! with the transaction's hash; `receipt` looks it up later.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, Log, LogData, B256, U256};
use serde_json::{json, Value};

use crate::ledger::{Ledger, Receipt, Submitted, TX_GAS_CAP};
use crate::tx::Eip1559Tx;
use crate::{Account, LedgerError, Revert};

/// Tip used when the node does not implement `eth_maxPriorityFeePerGas` (1 gwei).
const DEFAULT_PRIORITY_FEE: u128 = 1_000_000_000;

/// A JSON-RPC error answer.
#[derive(Debug)]
struct RpcFailure {
    message: String,
    data: Option<Value>,
}

impl RpcFailure {
    /// Revert data in an error answer: `data` as hex, or nested as `data.data` (Hardhat).
    fn revert_data(&self) -> Option<Bytes> {
        let mut v = self.data.as_ref()?;
        if let Some(inner) = v.get("data") {
            v = inner;
        }
        v.as_str()?.parse().ok()
    }
}

/// A ledger behind a JSON-RPC endpoint.
pub struct RpcLedger {
    url: String,
    agent: ureq::Agent,
    chain_id: u64,
    accounts: Vec<Account>,
    next_id: AtomicU64,
    receipt_timeout: Duration,
}

impl RpcLedger {
    /// Connect to `url` (e.g. `http://127.0.0.1:8545`) and sign with `accounts`.
    pub fn connect(url: &str, accounts: Vec<Account>) -> Result<Self, LedgerError> {
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(60)).build();
        let mut ledger = Self {
            url: url.to_string(),
            agent,
            chain_id: 0,
            accounts,
            next_id: AtomicU64::new(1),
            receipt_timeout: Duration::from_secs(120),
        };
        ledger.chain_id = qty_u64(&ledger.rpc("eth_chainId", json!([]))?)?;
        Ok(ledger)
    }

    /// The node's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One JSON-RPC request; `Ok(Err(_))` is an error answer from the node.
    fn request(&self, method: &str, params: Value) -> Result<Result<Value, RpcFailure>, LedgerError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = match self.agent.post(&self.url).send_json(body) {
            Ok(r) => r,
            // Some nodes answer JSON-RPC errors with an HTTP error status: read the body anyway.
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(LedgerError::Transport { url: self.url.clone(), message: e.to_string() }),
        };
        let answer: Value = response.into_json().map_err(|e| rpc_err(method, e))?;
        if let Some(err) = answer.get("error") {
            let message = err.get("message").and_then(Value::as_str).unwrap_or("error").to_string();
            return Ok(Err(RpcFailure { message, data: err.get("data").cloned() }));
        }
        match answer.get("result") {
            Some(v) => Ok(Ok(v.clone())),
            None => Err(rpc_err(method, "answer without result")),
        }
    }

    /// One JSON-RPC request whose error answer is an error.
    fn rpc(&self, method: &str, params: Value) -> Result<Value, LedgerError> {
        self.request(method, params)?.map_err(|f| rpc_err(method, f.message))
    }

    fn latest_block(&self) -> Result<Value, LedgerError> {
        self.rpc("eth_getBlockByNumber", json!(["latest", false]))
    }

    /// (max fee, priority fee) per gas for the next block.
    fn fees(&self) -> Result<(u128, u128), LedgerError> {
        let block = self.latest_block()?;
        let base = block
            .get("baseFeePerGas")
            .ok_or_else(|| rpc_err("eth_getBlockByNumber", "no baseFeePerGas: the node predates EIP-1559"))?;
        let base = qty_u256(base)?.saturating_to::<u128>();
        let tip = match self.request("eth_maxPriorityFeePerGas", json!([]))? {
            Ok(v) => qty_u256(&v)?.saturating_to::<u128>(),
            Err(_) => DEFAULT_PRIORITY_FEE,
        };
        Ok((2 * base + tip, tip))
    }

    fn call_object(from: Address, to: Option<Address>, data: &Bytes, value: U256) -> Value {
        let mut obj = json!({"from": from, "data": data, "value": value});
        if let Some(to) = to {
            obj["to"] = json!(to);
        }
        obj
    }

    /// Gas limit: the estimate plus a fifth, at most the cap; the cap if estimation fails.
    fn gas_limit(&self, call: &Value) -> Result<u64, LedgerError> {
        let mut call = call.clone();
        call["gas"] = json!(format!("{TX_GAS_CAP:#x}"));
        match self.request("eth_estimateGas", json!([call]))? {
            Ok(v) => Ok((qty_u64(&v)?.saturating_mul(6) / 5).min(TX_GAS_CAP)),
            Err(_) => Ok(TX_GAS_CAP),
        }
    }

    /// Signs and sends a transaction; its hash, the call (to replay for revert data) and the
    /// node's answer to `eth_sendRawTransaction`.
    fn sign_and_send(
        &mut self,
        from: &Account,
        to: Option<Address>,
        data: Bytes,
        value: U256,
    ) -> Result<(B256, Value, Result<Value, RpcFailure>), LedgerError> {
        let call = Self::call_object(from.address(), to, &data, value);
        let nonce = qty_u64(&self.rpc("eth_getTransactionCount", json!([from.address(), "pending"]))?)?;
        let (max_fee, tip) = self.fees()?;
        let gas_limit = self.gas_limit(&call)?;
        let tx = Eip1559Tx {
            chain_id: self.chain_id,
            nonce,
            max_priority_fee_per_gas: tip,
            max_fee_per_gas: max_fee,
            gas_limit,
            to,
            value,
            input: data,
        };
        let (raw, hash) = tx.sign(from.signing_key())?;
        let sent = self.request("eth_sendRawTransaction", json!([raw]))?;
        Ok((hash, call, sent))
    }

    fn transact(
        &mut self,
        from: &Account,
        to: Option<Address>,
        data: Bytes,
        value: U256,
    ) -> Result<Receipt, LedgerError> {
        let (hash, call, sent) = self.sign_and_send(from, to, data, value)?;
        // A node may answer a mined but reverted transaction with an error (Hardhat's
        // throwOnTransactionFailures): the receipt decides.
        let mut receipt = match (self.wait_receipt(hash, sent.is_ok())?, sent) {
            (Some(r), _) => r,
            (None, Err(f)) => return Err(LedgerError::InvalidTransaction(f.message)),
            (None, Ok(_)) => return Err(LedgerError::Timeout(hash.to_string())),
        };
        if !receipt.status {
            let at = format!("{:#x}", receipt.block_number.saturating_sub(1));
            if let Err(f) = self.request("eth_call", json!([call, at]))? {
                receipt.revert_data = f.revert_data();
                if receipt.revert_data.is_none() {
                    receipt.failure = Some(f.message);
                }
            }
        }
        Ok(receipt)
    }

    /// Poll for the receipt of `hash`; only one look if the node refused the transaction.
    fn wait_receipt(&self, hash: B256, accepted: bool) -> Result<Option<Receipt>, LedgerError> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(10);
        loop {
            let v = self.rpc("eth_getTransactionReceipt", json!([hash]))?;
            if !v.is_null() {
                return parse_receipt(&v).map(Some);
            }
            if !accepted || start.elapsed() > self.receipt_timeout {
                return Ok(None);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }
}

impl Ledger for RpcLedger {
    fn chain_id(&self) -> u64 {
        self.chain_id
    }

    fn accounts(&self) -> &[Account] {
        &self.accounts
    }

    fn deploy(&mut self, from: &Account, init_code: Bytes) -> Result<Address, LedgerError> {
        let r = self.transact(from, None, init_code, U256::ZERO)?.into_result()?;
        r.contract_address.ok_or_else(|| LedgerError::Failed("creation receipt without contractAddress".into()))
    }

    fn send(&mut self, from: &Account, to: Address, data: Bytes, value: U256) -> Result<Receipt, LedgerError> {
        self.transact(from, Some(to), data, value)
    }

    fn submit(&mut self, from: &Account, to: Address, data: Bytes, value: U256) -> Result<Submitted, LedgerError> {
        let (hash, _, sent) = self.sign_and_send(from, Some(to), data, value)?;
        match sent {
            Ok(_) => Ok(Submitted::Pending(hash)),
            // Refused, or mined and reverted (Hardhat answers both with an error): one look.
            Err(f) => match self.wait_receipt(hash, false)? {
                Some(r) => Ok(Submitted::Mined(r)),
                None => Err(LedgerError::InvalidTransaction(f.message)),
            },
        }
    }

    fn receipt(&self, hash: B256) -> Result<Option<Receipt>, LedgerError> {
        let v = self.rpc("eth_getTransactionReceipt", json!([hash]))?;
        if v.is_null() {
            return Ok(None);
        }
        parse_receipt(&v).map(Some)
    }

    fn call(&self, from: Address, to: Address, data: Bytes) -> Result<Bytes, LedgerError> {
        let call = Self::call_object(from, Some(to), &data, U256::ZERO);
        match self.request("eth_call", json!([call, "latest"]))? {
            Ok(v) => v.as_str().and_then(|s| s.parse().ok()).ok_or_else(|| rpc_err("eth_call", "result is not hex")),
            Err(f) => match f.revert_data() {
                Some(data) => Err(LedgerError::Revert(Revert::decode(&data))),
                None => Err(rpc_err("eth_call", f.message)),
            },
        }
    }

    fn block_timestamp(&self) -> Result<u64, LedgerError> {
        let block = self.latest_block()?;
        qty_u64(block.get("timestamp").unwrap_or(&Value::Null))
    }

    fn balance(&self, address: Address) -> Result<U256, LedgerError> {
        qty_u256(&self.rpc("eth_getBalance", json!([address, "latest"]))?)
    }

    fn fund(&mut self, address: Address, amount: U256) -> Result<(), LedgerError> {
        let faucet =
            self.accounts.first().cloned().ok_or_else(|| LedgerError::InvalidKey("no account to fund from".into()))?;
        self.transact(&faucet, Some(address), Bytes::new(), amount)?.into_result().map(|_| ())
    }

    fn advance_time(&mut self, secs: u64) -> Result<(), LedgerError> {
        let target = self.block_timestamp()? + secs;
        self.rpc("evm_setNextBlockTimestamp", json!([target]))?;
        self.rpc("evm_mine", json!([]))?;
        Ok(())
    }
}

fn rpc_err(method: &str, e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Rpc { method: method.to_string(), message: e.to_string() }
}

fn qty_u256(v: &Value) -> Result<U256, LedgerError> {
    let s = v.as_str().ok_or_else(|| rpc_err("quantity", format!("not a hex string: {v}")))?;
    U256::from_str_radix(s.trim_start_matches("0x"), 16).map_err(|e| rpc_err("quantity", format!("{s}: {e}")))
}

fn qty_u64(v: &Value) -> Result<u64, LedgerError> {
    let n = qty_u256(v)?;
    n.try_into().map_err(|_| rpc_err("quantity", format!("{n} does not fit 64 bits")))
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value, LedgerError> {
    v.get(name).ok_or_else(|| rpc_err("eth_getTransactionReceipt", format!("no {name}")))
}

fn parse_receipt(v: &Value) -> Result<Receipt, LedgerError> {
    let de = |e: serde_json::Error| rpc_err("eth_getTransactionReceipt", e);
    let mut logs = Vec::new();
    for log in field(v, "logs")?.as_array().into_iter().flatten() {
        let address: Address = serde_json::from_value(field(log, "address")?.clone()).map_err(de)?;
        let topics: Vec<B256> = serde_json::from_value(field(log, "topics")?.clone()).map_err(de)?;
        let data: Bytes = serde_json::from_value(field(log, "data")?.clone()).map_err(de)?;
        logs.push(Log { address, data: LogData::new_unchecked(topics, data) });
    }
    let contract_address = match v.get("contractAddress") {
        Some(a) if !a.is_null() => Some(serde_json::from_value(a.clone()).map_err(de)?),
        _ => None,
    };
    Ok(Receipt {
        tx_hash: Some(serde_json::from_value(field(v, "transactionHash")?.clone()).map_err(de)?),
        block_number: qty_u64(field(v, "blockNumber")?)?,
        status: qty_u64(field(v, "status")?)? == 1,
        gas_used: qty_u64(field(v, "gasUsed")?)?,
        effective_gas_price: qty_u256(field(v, "effectiveGasPrice")?)?.saturating_to(),
        logs,
        contract_address,
        revert_data: None,
        failure: None,
    })
}
