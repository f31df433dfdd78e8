#!/usr/bin/env node
// A small shellgate client in Node.js: loads the repository's .proto files at run time and
// calls ListTools, Project and the streaming Execute of ToolRouterService, printing one JSON
// object per line ({"rpc": ..., "response": ...}).
//
//   node client.js list-tools --target 127.0.0.1:50051
//   node client.js project    --cmd "git status"
//   node client.js execute    --item '{"type":"function_call","name":"shell_command",...}'
//   node client.js demo       (all three for one exec_command item)
//   node client.js run        --cmd "make test" --approve yes   (a harness loop: approvals
//                             are resumed, a still-running exec_command is polled with
//                             write_stdin until it exits)
//   node client.js run        --patch change.patch              (an apply_patch call)
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// client/examples/node → repository root → protos/
const PROTO_ROOT = process.env.SHELLGATE_PROTO_ROOT ||
  path.resolve(__dirname, '..', '..', '..', 'protos');

// These options make the decoded objects follow the proto3 JSON mapping (with proto field
// names): enum names, 64-bit integers as strings, bytes as base64, unset fields omitted and
// no virtual oneof fields. That is what Python's MessageToDict prints too.
const LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  bytes: String,
  defaults: false,
  arrays: false,
  objects: false,
  oneofs: false,
  includeDirs: [PROTO_ROOT],
};

function usage(message) {
  if (message) process.stderr.write(`client.js: ${message}\n`);
  process.stderr.write(
    'usage: node client.js {list-tools|project|execute|demo|run} [--target HOST:PORT] ' +
    '[--token T] [--tls-ca FILE] [--thread ID] [--turn FILE] ' +
    '[--item JSON | --cmd CMD | --patch FILE] [--approve yes|session|no] [--yield-ms N] ' +
    '[--timeout-s N]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const [command, ...rest] = argv;
  if (!['list-tools', 'project', 'execute', 'demo', 'run'].includes(command)) usage(`unknown command ${command}`);
  const opts = { command, target: '127.0.0.1:50051', timeoutS: 30, approve: 'yes', yieldMs: '1000' };
  const names = {
    '--target': 'target', '--token': 'token', '--tls-ca': 'tlsCa', '--thread': 'thread',
    '--turn': 'turn', '--item': 'item', '--cmd': 'cmd', '--timeout-s': 'timeoutS',
    '--patch': 'patch', '--approve': 'approve', '--yield-ms': 'yieldMs',
  };
  for (let i = 0; i < rest.length; i += 2) {
    const key = names[rest[i]];
    if (!key || i + 1 >= rest.length) usage(`bad option ${rest[i]}`);
    opts[key] = rest[i + 1];
  }
  opts.timeoutS = Number(opts.timeoutS);
  opts.thread = opts.thread || `node-${crypto.randomUUID()}`;
  return opts;
}

function loadService() {
  const definition = protoLoader.loadSync(
    [path.join(PROTO_ROOT, 'shellgate', 'v1', 'router.proto')], LOADER_OPTIONS);
  const loaded = grpc.loadPackageDefinition(definition);
  return loaded.shellgate.v1.ToolRouterService;
}

function makeClient(Service, opts) {
  const credentials = opts.tlsCa
    ? grpc.credentials.createSsl(fs.readFileSync(opts.tlsCa))
    : grpc.credentials.createInsecure();
  return new Service(opts.target, credentials);
}

// The token a local `shellgate serve` generated for its port (loopback targets only; the
// same lookup as shellgate.client.local_token): $XDG_RUNTIME_DIR/shellgate/router-PORT.token,
// else ~/.shellgate/run/shellgate/router-PORT.token.
function localToken(target) {
  const match = /^(?:ipv4:|ipv6:)?\[?(localhost|127\.[0-9.]+|::1)\]?:(\d+)$/.exec(target);
  if (!match) return undefined;
  const base = process.env.XDG_RUNTIME_DIR ||
    path.join(require('os').homedir(), '.shellgate', 'run');
  try {
    return fs.readFileSync(path.join(base, 'shellgate', `router-${match[2]}.token`), 'utf8').trim() ||
      undefined;
  } catch (err) {
    return undefined;
  }
}

function metadata(opts) {
  const md = new grpc.Metadata();
  const token = opts.token || process.env.SHELLGATE_TOKEN || localToken(opts.target);
  if (token) md.set('authorization', `Bearer ${token}`);
  return md;
}

function deadline(opts) {
  return new Date(Date.now() + opts.timeoutS * 1000);
}

function newCallId() {
  return `call_${crypto.randomBytes(12).toString('hex')}`;
}

// A function_call item (arguments are a JSON string, as the Responses API sends them).
function functionCall(name, args) {
  const call = { type: 'function_call', name, arguments: JSON.stringify(args), call_id: newCallId() };
  return { raw_json: JSON.stringify(call) };
}

// The item as the router takes it: raw Responses API JSON text.
function itemOf(opts) {
  if (opts.item) return { raw_json: opts.item };
  if (opts.patch) {
    // apply_patch is a freeform (custom) tool by default: the patch is the item's input.
    const input = fs.readFileSync(opts.patch, 'utf8');
    return { raw_json: JSON.stringify({ type: 'custom_tool_call', name: 'apply_patch', input, call_id: newCallId() }) };
  }
  const args = { cmd: opts.cmd || 'echo hello from node' };
  if (opts.command === 'run') args.yield_time_ms = Number(opts.yieldMs);
  return functionCall('exec_command', args);
}

// Poll a running exec_command session: write_stdin with empty chars waits for output.
function writeStdinItem(sessionId, chars, yieldMs) {
  return functionCall('write_stdin', { session_id: sessionId, chars, yield_time_ms: yieldMs });
}

const DECISIONS = {
  yes: 'APPROVAL_DECISION_APPROVED',
  session: 'APPROVAL_DECISION_APPROVED_FOR_SESSION',
  no: 'APPROVAL_DECISION_DENIED',
};

// TurnContext from a JSON file in the proto3 JSON mapping with proto field names (the same
// file `shellgate call --turn` reads); enum values must be names.
function turnOf(opts) {
  return opts.turn ? JSON.parse(fs.readFileSync(opts.turn, 'utf8')) : {};
}

function print(rpc, response) {
  process.stdout.write(JSON.stringify({ rpc, response }) + '\n');
}

function unary(client, method, request, opts) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata(opts), { deadline: deadline(opts) }, (err, response) => {
      if (err) reject(err); else resolve(response);
    });
  });
}

// Resolves with the stream's last event (completed or approval_required).
function execute(client, request, opts) {
  return new Promise((resolve, reject) => {
    // Execute may legitimately run for as long as the command does: no client deadline.
    const stream = client.Execute(request, metadata(opts));
    let last;
    stream.on('data', (event) => { last = event; print('Execute', event); });
    stream.on('error', reject);
    stream.on('end', () => resolve(last));
  });
}

// The harness loop for one model item: approvals are answered and the call resumed on the
// same thread; an exec_command still running at its yield time is polled with write_stdin
// until the process exits. Each call's `completed.output_item_json` goes to the model.
async function run(client, base, item, opts) {
  let last = await execute(client, { ...base, item }, opts);
  for (let round = 0; round < 100 && last; round += 1) {
    if (last.approval_required) {
      const decision = DECISIONS[opts.approve];
      if (!decision) usage(`--approve must be one of ${Object.keys(DECISIONS).join(', ')}`);
      const resume = { approval_id: last.approval_required.approval_id, decision };
      last = await execute(client, { ...base, resume }, opts);
    } else if (last.completed && last.completed.session_id !== undefined) {
      const poll = writeStdinItem(last.completed.session_id, '', Number(opts.yieldMs));
      last = await execute(client, { ...base, item: poll }, opts);
    } else {
      return;
    }
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const client = makeClient(loadService(), opts);
  const base = { thread_id: opts.thread, turn: turnOf(opts) };
  const item = itemOf(opts); // one item (one call id) for every RPC of this run
  try {
    if (opts.command === 'list-tools' || opts.command === 'demo') {
      print('ListTools', await unary(client, 'ListTools', base, opts));
    }
    if (opts.command === 'project' || opts.command === 'demo') {
      print('Project', await unary(client, 'Project', { ...base, item }, opts));
    }
    if (opts.command === 'execute' || opts.command === 'demo') {
      await execute(client, { ...base, item }, opts);
    }
    if (opts.command === 'run') {
      await run(client, base, item, opts);
    }
  } catch (err) {
    process.stderr.write(`client.js: ${err.code !== undefined ? grpc.status[err.code] + ': ' : ''}${err.details || err.message}\n`);
    process.exitCode = 1;
  } finally {
    client.close();
  }
}

main();
