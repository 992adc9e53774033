// Parts of the server most deployments never touch (the MCP SDK, the MySQL driver, …) are
// imported on first use rather than at start-up, so a server that only runs PostgreSQL
// exports keeps its memory for that (the idle process was once most of an export's RSS).

/** A memoised dynamic import: loads on the first call; a failed load is tried again next time. */
export function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((err: unknown) => {
      loading = undefined;
      throw err;
    }));
}
