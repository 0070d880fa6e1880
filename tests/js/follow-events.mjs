// Follows a coordinator event stream with the `eventsource` package (a
// WHATWG-compliant client) until it has `want` events, then prints what it
// saw as JSON: the SSE ids in order, and how many times it (re)connected.
//
//   node follow-events.mjs URL TOKEN WANT KIND[,KIND...]
import { EventSource } from 'eventsource';

const [url, token, wantArg, kindsArg] = process.argv.slice(2);
const want = Number(wantArg);
const ids = [];
let opens = 0;
const es = new EventSource(url, {
  fetch: (input, init) =>
    fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${token}` } }),
});
es.onopen = () => { opens += 1; };
const done = () => {
  es.close();
  process.stdout.write(JSON.stringify({ ids, opens }) + '\n');
  process.exit(0);
};
// Events are named by kind; a WHATWG client only dispatches names it listens for.
for (const kind of kindsArg.split(',')) {
  es.addEventListener(kind, (e) => {
    ids.push(Number(e.lastEventId));
    JSON.parse(e.data);
    if (ids.length >= want) done();
  });
}
setTimeout(() => {
  process.stderr.write(`timed out with ${ids.length} of ${want} events after ${opens} connections\n`);
  process.stdout.write(JSON.stringify({ ids, opens }) + '\n');
  process.exit(1);
}, 60000);
