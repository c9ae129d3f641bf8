//! FOBS, built from Dickens, Kannan and Gropp (2003); no public implementation exists.
