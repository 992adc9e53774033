// Anthropic Messages API. The system text is a top-level field, not a message, and
// max_tokens is required.
import { GenerationFailedError } from '../../errors.ts';
import type { ProviderReply, ProviderRequest, SqlProvider } from '../generate.ts';
import { postJson } from './http.ts';
import { buildPrompt, parseReply } from './prompt.ts';

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
export const ANTHROPIC_DEFAULT_MODEL = 'claude-sonnet-4-5';
export const ANTHROPIC_VERSION = '2023-06-01';

export interface AnthropicConfig {
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  timeoutMs: number;
  maxTokens?: number;
  fetchImpl?: typeof fetch;
  retryBaseDelayMs?: number;
}

export function createAnthropicProvider(cfg: AnthropicConfig): SqlProvider {
  const base = (cfg.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, '');
  const model = cfg.model ?? ANTHROPIC_DEFAULT_MODEL;
  return {
    name: 'anthropic',
    model,
    async generate(req: ProviderRequest): Promise<ProviderReply> {
      const { system, turns, offered } = buildPrompt(req);
      const headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION };
      if (cfg.apiKey) headers['x-api-key'] = cfg.apiKey;
      const json = (await postJson(
        'anthropic',
        `${base}/v1/messages`,
        headers,
        { model, max_tokens: cfg.maxTokens ?? 1024, temperature: 0, system, messages: turns },
        { timeoutMs: cfg.timeoutMs, fetchImpl: cfg.fetchImpl, baseDelayMs: cfg.retryBaseDelayMs },
      )) as { content?: { type?: string; text?: unknown }[] };
      const text = (json.content ?? [])
        .filter((b) => b.type === 'text' && typeof b.text === 'string')
        .map((b) => b.text as string)
        .join('\n');
      if (text === '') throw new GenerationFailedError('anthropic reply had no text content');
      return { ...parseReply(text, req), offered };
    },
  };
}
