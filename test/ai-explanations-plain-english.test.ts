// The builtin's explanations read like a person wrote them: the verb says what the SQL does
// (Counts / Computes / Lists / Finds), "for each" names the grouping, the sort reads as
// "largest first" / "newest first", related rows as "that have no orders", and no word is
// said twice in a row ("total total") for any question of the shop set.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generateBuiltinSql } from '../src/ai/builtin/index.ts';
import { shopIndex } from './support/ai-parse.ts';

const explain = (q: string): string => generateBuiltinSql(q, shopIndex(), 'sqlite').explanation;

describe('builtin explanations in plain English', () => {
  it('says what a grouped count does and how it is sorted', () => {
    expect(explain('Number of orders per status, largest first')).toBe('Counts orders for each status, largest first.');
    expect(explain('How many customers are there in each city?')).toBe('Counts customers for each city.');
    expect(explain('Average price per category')).toBe('Computes the average price for each category.');
  });

  it('reads a superlative as finding the row, not as a sort with a limit', () => {
    expect(explain('Which city has the most customers?')).toBe('Finds the city with the most customers.');
    expect(explain('What is the most expensive product?')).toBe(
      'Finds the product (name) with the highest price (all of them when several tie).',
    );
  });

  it('reads related rows as what the rows have, and a calendar year as "in 2025"', () => {
    expect(explain('Customers who did not order in 2025')).toBe(
      'Lists customers (first name, last name) that have no orders where ordered at is in 2025.',
    );
    expect(explain('Customers with fewer than 2 orders')).toBe('Lists customers (first name, last name) that have fewer than 2 orders.');
    expect(explain('Which categories have at least 5 products?')).toBe(
      'Lists categories (name), keeping only those with at least 5 products.',
    );
  });

  it('never repeats a word, for every question of the shop set', () => {
    const questions = JSON.parse(readFileSync('test/fixtures/ai-questions.json', 'utf8')) as { question: string }[];
    const doubled: string[] = [];
    for (const { question } of questions) {
      let text: string;
      try {
        text = explain(question);
      } catch {
        continue; // questions the hand-made schema's samples cannot place are the eval's business
      }
      expect(text).toMatch(/^(Counts|Computes|Lists|Finds) .*\.$/);
      if (/\b(\w+) \1\b/i.test(text)) doubled.push(`${question} → ${text}`);
    }
    expect(doubled).toEqual([]);
    expect(explain("What's the total value of all delivered orders?")).not.toMatch(/total total/);
  });
});
