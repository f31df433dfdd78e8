#!/usr/bin/env node
// A small shellgate client in Node.js: loads the repository's .proto files at run time and
// calls ListTools, Project and the streaming Execute of ToolRouterService, printing one JSON
// object per line ({"rpc": ..., "response": ...}).
//
//   node client.js list-tools --target 127.0.0.1:50051
//   node client.js project    --cmd "git status"
//   node client.js execute    --item '{"type":"function_call","name":"shell_command",...}'
//   node client.js demo       (all three for one exec_command item)
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
    'usage: node client.js {list-tools|project|execute|demo} [--target HOST:PORT] ' +
    '[--token T] [--tls-ca FILE] [--thread ID] [--turn FILE] [--item JSON | --cmd CMD] ' +
    '[--timeout-s N]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const [command, ...rest] = argv;
  if (!['list-tools', 'project', 'execute', 'demo'].includes(command)) usage(`unknown command ${command}`);
  const opts = { command, target: '127.0.0.1:50051', timeoutS: 30 };
  const names = {
    '--target': 'target', '--token': 'token', '--tls-ca': 'tlsCa', '--thread': 'thread',
    '--turn': 'turn', '--item': 'item', '--cmd': 'cmd', '--timeout-s': 'timeoutS',
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

// The item as the router takes it: raw Responses API JSON text.
function itemOf(opts) {
  if (opts.item) return { raw_json: opts.item };
  const cmd = opts.cmd || 'echo hello from node';
  const callId = `call_${crypto.randomBytes(12).toString('hex')}`;
  const call = { type: 'function_call', name: 'exec_command', arguments: JSON.stringify({ cmd }), call_id: callId };
  return { raw_json: JSON.stringify(call) };
}

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

function execute(client, request, opts) {
  return new Promise((resolve, reject) => {
    // Execute may legitimately run for as long as the command does: no client deadline.
    const stream = client.Execute(request, metadata(opts));
    stream.on('data', (event) => print('Execute', event));
    stream.on('error', reject);
    stream.on('end', resolve);
  });
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
  } catch (err) {
    process.stderr.write(`client.js: ${err.code !== undefined ? grpc.status[err.code] + ': ' : ''}${err.details || err.message}\n`);
    process.exitCode = 1;
  } finally {
    client.close();
  }
}

main();
