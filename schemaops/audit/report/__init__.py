"""Reports: the result document and its terminal, text, Markdown and HTML renderings."""
