// An echo server in Node.js: the `net` module on libuv's event loop (epoll
// underneath), one callback chain per connection, one thread.
//
// usage: node node_echo.js PORT [ADDR]    (PORT 0: any free port)
//
// Echoes every byte; when the client half-closes, sends what is left and
// then EOF (allowHalfOpen). Prints `READY ADDR:PORT` once it listens;
// exits on SIGTERM.
'use strict';
const net = require('net');

if (process.argv.length < 3 || process.argv.length > 4) {
  console.error('usage: node node_echo.js PORT [ADDR]');
  process.exit(2);
}
const port = Number(process.argv[2]);
const addr = process.argv[3] || '127.0.0.1';

const server = net.createServer({ allowHalfOpen: true }, (socket) => {
  socket.on('error', () => socket.destroy());
  // pipe() applies backpressure and ends our side after the client's end.
  socket.pipe(socket);
});
server.on('error', (e) => {
  console.error(`node_echo: ${e.message}`);
  process.exit(1);
});
server.listen({ port, host: addr, backlog: 4096 }, () => {
  const a = server.address();
  console.log(`READY ${a.address}:${a.port}`);
});
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
