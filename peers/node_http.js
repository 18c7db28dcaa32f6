// A web server in Node.js: the `http` module on libuv's event loop (epoll
// underneath), one thread, as its users write it.
//
// usage: node node_http.js PORT [ADDR]    (PORT 0: any free port)
//
// Answers every request with `Hello, World!` (TechEmpower's plaintext),
// with Content-Type, Content-Length, Date and Server; keep-alive and
// pipelining are Node's own. One setting differs from Node's defaults:
// keepAliveTimeout is off, because a resident slot leaves its
// connections idle while other servers are measured, and Node would close
// them after 5 s (a client that reconnects is counted, not hidden, but
// the reconnect is c10k's schedule, not Node's cost). Prints `READY
// ADDR:PORT` once it listens; exits on SIGTERM.
'use strict';
const http = require('http');

if (process.argv.length < 3 || process.argv.length > 4) {
  console.error('usage: node node_http.js PORT [ADDR]');
  process.exit(2);
}
const port = Number(process.argv[2]);
const addr = process.argv[3] || '127.0.0.1';
const hello = Buffer.from('Hello, World!');

const server = http.createServer((req, res) => {
  // Read the body (a POST's) before answering, as a handler that uses it
  // would.
  req.resume();
  req.on('end', () => {
    res.writeHead(200, {
      'Content-Type': 'text/plain',
      'Content-Length': hello.length,
      Server: 'node',
    });
    res.end(hello);
  });
});
server.keepAliveTimeout = 0;
server.on('error', (e) => {
  console.error(`node_http: ${e.message}`);
  process.exit(1);
});
server.listen({ port, host: addr, backlog: 4096 }, () => {
  const a = server.address();
  console.log(`READY ${a.address}:${a.port}`);
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
