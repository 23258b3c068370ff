#!/usr/bin/env node
// Compiles src/*.sol with the pinned solc-js (package.json) through the standard JSON interface and
// writes one artifact per deployable contract to artifacts/<Contract>.json (or to --out DIR). The output is
// deterministic (fixed settings, sorted keys, trailing newline): recompiling unchanged sources
// gives byte-identical files, which CI checks (.ci/contracts-check).
'use strict';

const fs = require('fs');
const path = require('path');
const solc = require('solc');

const root = __dirname;
const srcDir = path.join(root, 'src');
// `node compile.js --out DIR` writes elsewhere (the CI check compares DIR with artifacts/).
const outFlag = process.argv.indexOf('--out');
const outDir = outFlag > 0 ? path.resolve(process.argv[outFlag + 1]) : path.join(root, 'artifacts');

// Changing any of these changes the bytecode: recompile and commit the artifacts.
const SETTINGS = {
  evmVersion: 'prague',
  optimizer: { enabled: true, runs: 200 },
  viaIR: true,
};

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out = {};
    for (const k of Object.keys(value).sort()) out[k] = sortKeys(value[k]);
    return out;
  }
  return value;
}

function main() {
  const files = fs.readdirSync(srcDir).filter((f) => f.endsWith('.sol')).sort();
  const sources = {};
  for (const f of files) {
    sources[`src/${f}`] = { content: fs.readFileSync(path.join(srcDir, f), 'utf8') };
  }
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      ...SETTINGS,
      outputSelection: {
        '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object', 'evm.methodIdentifiers'] },
      },
    },
  };

  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const diagnostics = output.errors || [];
  for (const d of diagnostics) process.stderr.write(d.formattedMessage || d.message);
  if (diagnostics.length > 0) {
    // Errors fail the build; so do warnings, to keep the sources clean.
    process.stderr.write(`compile.js: ${diagnostics.length} diagnostic(s), no artifacts written\n`);
    process.exit(1);
  }

  fs.mkdirSync(outDir, { recursive: true });
  const written = new Set();
  for (const sourceName of Object.keys(output.contracts).sort()) {
    for (const contractName of Object.keys(output.contracts[sourceName]).sort()) {
      const c = output.contracts[sourceName][contractName];
      if (!c.evm.bytecode.object) continue; // interfaces and abstract contracts
      const artifact = {
        contractName,
        sourceName,
        compiler: { version: solc.version(), settings: SETTINGS },
        abi: sortKeys(c.abi),
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
        methodIdentifiers: sortKeys(c.evm.methodIdentifiers),
      };
      const file = `${contractName}.json`;
      if (written.has(file)) throw new Error(`two contracts named ${contractName}`);
      written.add(file);
      fs.writeFileSync(path.join(outDir, file), `${JSON.stringify(artifact, null, 2)}\n`);
    }
  }
  // Drop artifacts of contracts that no longer exist.
  for (const f of fs.readdirSync(outDir)) {
    if (f.endsWith('.json') && !written.has(f)) fs.unlinkSync(path.join(outDir, f));
  }
  process.stdout.write(`compiled ${files.length} source(s) with solc ${solc.version()}: ${[...written].join(', ')}\n`);
}

main();
