from freshcrawl.cli import main

main()
