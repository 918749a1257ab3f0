// Host text inside markup (issue 26, item 4): in Slack's `text` and in Markdown it is never live markup.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { markdownHostText, slackEscape, slackHostText } from '../../src/shared/host-markup.js';

describe('host text in Slack', () => {
  it('escapes &, < and > as Slack documents, so no mention or link is live', () => {
    assert.equal(
      slackEscape('a & b <!channel> <https://x|y>'),
      'a &amp; b &lt;!channel&gt; &lt;https://x|y&gt;',
    );
    assert.equal(slackHostText('<!channel> fix it'), '`&lt;!channel&gt; fix it`');
    assert.equal(
      slackHostText('see <https://evil.example|the docs>'),
      '`see &lt;https://evil.example|the docs&gt;`',
    );
    assert.equal(slackHostText('R&D'), '`R&amp;D`');
  });

  it('keeps the text inside its code span: a backtick cannot close it', () => {
    const text = slackHostText('`` <!here> *bold* ``');
    assert.equal(text, "`'' &lt;!here&gt; *bold* ''`");
    assert.equal([...text].filter((c) => c === '`').length, 2);
  });

  it('puts text of several lines in a code block', () => {
    assert.equal(slackHostText('line 1\n<!channel>\n```'), "```\nline 1\n&lt;!channel&gt;\n'''\n```");
  });
});

describe('host text in Markdown', () => {
  it('puts links and image beacons in a code span', () => {
    assert.equal(markdownHostText('![b](http://x)'), '`![b](http://x)`');
    assert.equal(markdownHostText('[a](b) <img src=x>'), '`[a](b) <img src=x>`');
  });

  it('uses a fence longer than any run of backticks inside, padded where the text starts or ends with one', () => {
    assert.equal(markdownHostText('a `b` c'), '``a `b` c``');
    assert.equal(markdownHostText('x ``` ![b](http://x)'), '````x ``` ![b](http://x)````');
    assert.equal(markdownHostText('`![b](http://x)`'), '`` `![b](http://x)` ``');
    assert.equal(markdownHostText(' both ends '), '`  both ends  `');
    assert.equal(markdownHostText(' one end'), '` one end`');
  });

  it('shows line breaks as \\n, so the text cannot start a block of its own', () => {
    const text = markdownHostText('ok\n# Heading\r\n![b](http://x)\r- item');
    assert.equal(text, '`ok\\n# Heading\\n![b](http://x)\\n- item`');
    assert.doesNotMatch(text, /[\r\n]/);
  });

  it('escapes pipes in a table cell and nowhere else', () => {
    assert.equal(markdownHostText('a | b', { tableCell: true }), '`a \\| b`');
    assert.equal(markdownHostText('a \\| b', { tableCell: true }), '`a \\\\| b`');
    assert.equal(markdownHostText('a | b'), '`a | b`');
  });
});
