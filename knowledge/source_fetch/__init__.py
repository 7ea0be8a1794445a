"""Reading what a followed source holds now, for its sync (knowledge.services.sources): the readers
of web sites, Git repositories and server folders (readers, web_reader; what each lists: items) and
what they fetch with, each hostile input refused: a web page (web), robots.txt (robots), the spacing
of requests to a host (pacing), a budget for a whole crawl (budget) and a Git mirror (git).
"""
