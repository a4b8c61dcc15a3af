// A webhook receiver as a Longhaul user would write one: every delivery is
// verified with the Standard Webhooks library (standardwebhooks, pinned by
// package-lock.json) against the secret of its path, and each event is
// processed once per webhook-id, however often it is delivered, across
// restarts (the ids processed are kept in SEEN_FILE).
//
// Environment: PORT (on 127.0.0.1), SECRETS (JSON: path -> whsec_ secret),
// SEEN_FILE, and MODE: "down" answers every verified delivery 503 (a
// receiver that is not ready); "up" processes a new event and then
// answers 500, as if its answer were lost, so the retry that follows is a
// duplicate, answered 200 and not processed again.
//
// It prints a JSON line per request on stdout, and {"listening": port}
// once it listens.
"use strict";
const fs = require("node:fs");
const http = require("node:http");
const { Webhook } = require("standardwebhooks");

const port = Number(process.env.PORT);
const secrets = JSON.parse(process.env.SECRETS);
const seenFile = process.env.SEEN_FILE;
const mode = process.env.MODE;

const seen = new Set(fs.existsSync(seenFile) ? fs.readFileSync(seenFile, "utf8").split("\n").filter(Boolean) : []);

function report(line) {
  process.stdout.write(JSON.stringify(line) + "\n");
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const line = { path: req.url, id: req.headers["webhook-id"] };
    const answer = (status) => {
      line.status = status;
      report(line);
      res.writeHead(status).end();
    };
    const secret = secrets[req.url];
    if (!secret) return answer(404);
    let event;
    try {
      event = new Webhook(secret).verify(body, req.headers);
    } catch (e) {
      line.verified = false;
      line.error = String(e);
      return answer(401);
    }
    line.verified = true;
    line.event = event;
    if (mode === "down") return answer(503);
    if (seen.has(line.id)) {
      line.duplicate = true;
      return answer(200);
    }
    seen.add(line.id);
    fs.appendFileSync(seenFile, line.id + "\n");
    line.processed = true;
    answer(500);
  });
});

server.listen(port, "127.0.0.1", () => report({ listening: port }));
process.on("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
