// OpenAI chat completions, and every server that speaks the same API (Ollama, vLLM,
// llama.cpp server, LM Studio) via the base URL. Local servers usually need no key, so the
// Authorization header is sent only when one is configured.
import { GenerationFailedError } from '../../errors.ts';
import type { ProviderReply, ProviderRequest, SqlProvider } from '../generate.ts';
import { postJson } from './http.ts';
import { buildPrompt, parseReply } from './prompt.ts';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
export const OPENAI_DEFAULT_MODEL = 'gpt-4o-mini';

export interface OpenAiConfig {
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  timeoutMs: number;
  fetchImpl?: typeof fetch;
  retryBaseDelayMs?: number;
}

export function createOpenAiProvider(cfg: OpenAiConfig): SqlProvider {
  const base = (cfg.baseUrl ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, '');
  const model = cfg.model ?? OPENAI_DEFAULT_MODEL;
  return {
    name: 'openai',
    model,
    async generate(req: ProviderRequest): Promise<ProviderReply> {
      const { system, turns, offered } = buildPrompt(req);
      const headers: Record<string, string> = {};
      if (cfg.apiKey) headers.authorization = `Bearer ${cfg.apiKey}`;
      const json = (await postJson(
        'openai',
        `${base}/chat/completions`,
        headers,
        { model, temperature: 0, messages: [{ role: 'system', content: system }, ...turns] },
        { timeoutMs: cfg.timeoutMs, fetchImpl: cfg.fetchImpl, baseDelayMs: cfg.retryBaseDelayMs },
      )) as { choices?: { message?: { content?: unknown } }[] };
      const content = json.choices?.[0]?.message?.content;
      if (typeof content !== 'string') throw new GenerationFailedError('openai reply had no message content');
      return { ...parseReply(content, req), offered };
    },
  };
}
