// Picks the SQL provider from configuration (DBQ_AI_PROVIDER, DBQ_AI_BASE_URL, DBQ_AI_API_KEY,
// DBQ_AI_MODEL, parsed in src/config.ts and passed here). The builtin needs none of them.
import { createBuiltinProvider } from '../builtin/index.ts';
import type { SqlProvider } from '../generate.ts';
import { createAnthropicProvider } from './anthropic.ts';
import { createOpenAiProvider } from './openai.ts';

export interface ProviderConfig {
  provider: 'builtin' | 'openai' | 'anthropic';
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  timeoutMs: number;
  /** For tests: a stand-in for global fetch, and a short retry backoff. */
  fetchImpl?: typeof fetch;
  retryBaseDelayMs?: number;
}

export function createProvider(cfg: ProviderConfig): SqlProvider {
  switch (cfg.provider) {
    case 'builtin':
      return createBuiltinProvider();
    case 'openai':
      return createOpenAiProvider(cfg);
    case 'anthropic':
      return createAnthropicProvider(cfg);
  }
}

export { createBuiltinProvider } from '../builtin/index.ts';
export { createOpenAiProvider } from './openai.ts';
export { createAnthropicProvider } from './anthropic.ts';
