// A client of mnemo's HTTP API typed by the types openapi-typescript
// generates from the OpenAPI document (generated/mnemo.ts, written by
// scripts/openapi-check.sh). It is compiled, never run: it fails to compile
// when the document stops describing what the server accepts and returns,
// e.g. metadata as an object with no members, a field the server defaults
// made required, or a field the server always returns made optional.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/mnemo";

type Schemas = components["schemas"];

const mnemo = createClient<paths>({
  baseUrl: "http://127.0.0.1:7077",
  headers: { Authorization: "Bearer KEY" },
});

// The fields a Memory and a Result always carry are not optional.
function describe(m: Schemas["Memory"]): string {
  const id: string = m.id;
  const importance: number = m.importance;
  const created: string = m.created_at;
  const accessed: number = m.access_count;
  const metadata: Record<string, unknown> | undefined = m.metadata;
  return `${id} ${importance} ${created} ${accessed} ${JSON.stringify(metadata ?? {})}`;
}

export async function storeRecallList(): Promise<string[]> {
  // Metadata of any JSON values; no importance (the server's default, 0.5),
  // no kind.
  const created = await mnemo.POST("/v1/memories", {
    body: { content: "The ferry leaves at nine", session: "s1", metadata: { a: 1, b: { c: "x" } } },
  });
  if (created.error) {
    const code: Schemas["Error"]["code"] = created.error.code;
    throw new Error(`${code}: ${created.error.error}`);
  }
  const id: string = "id" in created.data ? created.data.id : (created.data.ids[0] ?? "");

  // A recall of the query alone: limit, strategy and the rest default.
  const recalled = await mnemo.POST("/v1/recall", { body: { query: "when does the ferry leave?" } });
  if (recalled.error) {
    throw new Error(recalled.error.error);
  }
  const lines = [id];
  let previous = Infinity;
  for (const r of recalled.data.results) {
    const score: number = r.score;
    const rank: number = r.rank;
    const relevance: number = r.relevance;
    const lexicalRank: number | undefined = r.legs["lexical"]?.rank;
    if (score > previous) {
      throw new Error(`result ${rank} scores above the one before it`);
    }
    previous = score;
    lines.push(`${rank}. ${r.id} ${score} ${relevance} ${lexicalRank ?? "-"} ${r.content}`);
  }

  // A page of the profile's memories.
  const page = await mnemo.GET("/v1/memories", { params: { query: { session: "s1", limit: 10 } } });
  if (page.error) {
    throw new Error(page.error.error);
  }
  for (const m of page.data.memories) {
    lines.push(describe(m));
  }
  const next: string | undefined = page.data.next_cursor;
  if (next !== undefined) {
    lines.push(`more after ${next}`);
  }

  // Settings: the answer holds every one; a change names any subset, and
  // null resets one.
  const settings = await mnemo.PATCH("/v1/settings", { body: { min_relevance: 0.1, autocut: null } });
  if (settings.data) {
    const margin: number = settings.data.relevance_margin;
    lines.push(`relevance margin ${margin}`);
  }
  return lines;
}
