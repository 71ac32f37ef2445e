"""The floor every stage stands on: errors and stage names, the report models' base, launches as data,
untrusted text made safe, process groups, the argparse types, the grader's version and the Exercise type.
Nothing here imports a stage package."""
