// Hardhat 2 configuration for the local JSON-RPC node that the integration tests of
// crates/market start (`hardhat node --config hardhat.config.js --port N`). It only serves a
// chain: the contracts are compiled by compile.js with the pinned solc, never by Hardhat.
//
// The dev accounts are the same as the embedded ledger's (crates/market/src/accounts.rs):
// private key i = sha256("aviary-dev-account-" + i), i = 0..9, each funded with 10000 ETH.
// They are public test keys: never use them on a real chain.
const crypto = require("crypto");
const os = require("os");
const path = require("path");

const DEV_ACCOUNTS = 10;
const accounts = Array.from({ length: DEV_ACCOUNTS }, (_, i) => ({
  privateKey: "0x" + crypto.createHash("sha256").update(`aviary-dev-account-${i}`).digest("hex"),
  balance: "10000000000000000000000",
}));

// Hardhat's default artifacts folder would be contracts/artifacts, which holds the committed
// solc output: point every Hardhat path elsewhere so a Hardhat task can never touch it.
const scratch = path.join(os.tmpdir(), "aviary-hardhat");

module.exports = {
  defaultNetwork: "hardhat",
  networks: {
    hardhat: {
      chainId: 31337,
      hardfork: "osaka",
      // P256VERIFY at 0x100, used by AsRegistry to check P-256 signatures.
      enableRip7212: true,
      accounts,
      mining: { auto: true, interval: 0 },
    },
  },
  paths: {
    sources: path.join(scratch, "sources"),
    cache: path.join(scratch, "cache"),
    artifacts: path.join(scratch, "artifacts"),
    tests: path.join(scratch, "tests"),
  },
};
