from harvester.cli import main

# Guarded: scan's reader process (multiprocessing "spawn") imports this module again.
if __name__ == "__main__":
    main()
